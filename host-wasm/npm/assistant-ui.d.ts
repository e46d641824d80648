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
import type { ChatMessageView, Conversation, ConversationState, ToolCallView } from "./index.js";

/** The `artifact` of every tool-call part the runtime produces (`toolName` is the canonical id). */
export interface DpasToolArtifact {
  canonicalId: string;
  wireName: string;
  executor: "server" | "browser";
  state: ToolCallView["state"];
}

/** What `POST {approvalsEndpoint}/:id` answered, with the decision that was sent. */
export interface DpasApprovalDecision {
  approvalId: string;
  approved: boolean;
  receipt: { text: string; ok: boolean };
  resolution: { status: string; output?: unknown; error?: { message?: unknown } };
}

export interface DpasRuntimeOptions {
  /** The server's approvals API; default "/api/approvals". */
  approvalsEndpoint?: string;
  /** Called after an approval card's decision was accepted (e.g. to refetch the app's data). */
  onApprovalDecided?: (decision: DpasApprovalDecision) => void;
}

/** A message as assistant-ui's ThreadMessageLike: parts in model order; `running` marks a
 *  message still being streamed. */
export declare function toThreadMessage(message: ChatMessageView, index: number, running: boolean): ThreadMessageLike;

/** assistant-ui's external-store runtime over the result of `useConversation()`: `onNew`
 *  sends the message's text, `onCancel` cancels the turn. */
export declare function useDpasRuntime(
  chat: { state: ConversationState; conversation: Conversation },
  options?: DpasRuntimeOptions,
): AssistantRuntime;

/** The generic tool card: capability id, state, input and result; an `approval-required`
 *  result shows <DpasApprovalCard>. */
export declare function DpasToolCard(props: ToolCallMessagePartProps): ReactElement;

export interface DpasApprovalCardProps {
  approvalId: string;
  message?: string;
  canonicalId: string;
  input: unknown;
}

/** Deny / Approve for a server approval, under a runtime from useDpasRuntime. */
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
