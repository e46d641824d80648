// @dpas/host/assistant-ui: assistant-ui (@assistant-ui/react 0.15) over the package's
// Conversation. @assistant-ui/react and react are optional peers: only this entry needs them.
import type { ReactElement, ReactNode } from "react";
import type {
  AssistantRuntime,
  ReasoningMessagePartComponent,
  TextMessagePartComponent,
  ThreadMessageLike,
  ToolCallMessagePartComponent,
  ToolCallMessagePartProps,
} from "@assistant-ui/react";
import type {
  ApprovalDecision,
  ChatMessageView,
  Conversation,
  ConversationState,
  ToolCallPhase,
  ToolCallView,
} from "./index.js";

/** The `artifact` of every tool-call part the runtime produces (`toolName` is the canonical id). */
export interface DpasToolArtifact {
  canonicalId: string;
  wireName: string;
  executor: "server" | "browser";
  state: ToolCallView["state"];
}

export interface DpasRuntimeOptions {
  /** The server's approvals API (useApprovals' `endpoint`); default "/api/approvals". */
  approvalsEndpoint?: string;
  /** Called after an approval card's decision was accepted (e.g. to refetch the app's data). */
  onApprovalDecided?: (decision: ApprovalDecision) => void;
}

/** A message as assistant-ui's ThreadMessageLike: parts in model order; `running` marks a
 *  message still being streamed. */
export declare function toThreadMessage(message: ChatMessageView, index: number, running: boolean): ThreadMessageLike;

/** assistant-ui's external-store runtime over the result of `useConversation()`: `onNew`
 *  sends the message's text, `onCancel` cancels the turn; the conversation's approvals
 *  (useApprovals) reach the approval cards. */
export declare function useDpasRuntime(
  chat: { state: ConversationState; conversation: Conversation },
  options?: DpasRuntimeOptions,
): AssistantRuntime;

/** The generic tool card: capability id, state (`data-state`: running, done, error,
 *  awaiting-approval, decided), input and result; a server call's approval shows
 *  <DpasApprovalCard>. */
export declare function DpasToolCard(props: ToolCallMessagePartProps): ReactElement;

export interface DpasApprovalCardProps {
  /** The call's `toolCallPhase` while it waits for an approval or once decided. */
  phase: Extract<ToolCallPhase, { phase: "awaiting-approval" | "decided" }>;
  canonicalId: string;
  input: unknown;
}

/** Deny / Approve for a server approval (through useApprovals), then the receipt; under a
 *  runtime from useDpasRuntime. */
export declare function DpasApprovalCard(props: DpasApprovalCardProps): ReactElement;

export interface DpasThreadProps {
  /** Shown while the thread is empty. */
  welcome?: ReactNode;
  /** The composer's placeholder; default "Message". */
  placeholder?: string;
  /** Replace the text, reasoning or tool-card renderer (tools registered by name with
   *  makeAssistantToolUI still win over `ToolFallback`). */
  components?: {
    Text?: TextMessagePartComponent;
    Reasoning?: ReasoningMessagePartComponent;
    ToolFallback?: ToolCallMessagePartComponent;
  };
  className?: string;
}

/** A whole chat: messages, the turn's error, a composer with Send and Stop. Render it inside
 *  <AssistantRuntimeProvider runtime={useDpasRuntime(chat)}>. */
export declare function DpasThread(props: DpasThreadProps): ReactElement;
