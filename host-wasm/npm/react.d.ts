// @dpas/host/react: React bindings of the same package (React >= 18.2).
import type { ReactElement, ReactNode } from "react";
import type {
  CapabilitySchema,
  ApprovalCard,
  ApprovalDecision,
  ApprovalError,
  ComponentDef,
  ConfirmRequest,
  Conversation,
  ConversationOptions,
  ConversationState,
  ExposeWebMcpOptions,
  ProcedureExecutor,
  Surface,
} from "./index.js";

export interface SurfaceProviderProps {
  /** Runs `domain:<path>` references (typically the app's own RPC); read when one runs. */
  executeProcedure?: ProcedureExecutor;
  /** Registers the surface's capabilities with the browser's WebMCP, where it has it, under
   *  the same rules as a turn (off by default). Confirmations go to usePendingConfirmations()
   *  unless the options give `confirm`; read once. */
  webMcp?: boolean | ExposeWebMcpOptions;
  /** One executor across tabs for the conversations under it (default true); `false` turns
   *  it off for every useConversation below, as `tabs: false` does for one. Read once. */
  tabs?: boolean;
  /** Rendered until the wasm is initialised and the Surface exists. */
  fallback?: ReactNode;
  children?: ReactNode;
}

/** Initialises the wasm once and provides the app's one Surface. An initialisation failure is
 *  thrown to the nearest error boundary. */
export declare function SurfaceProvider(props: SurfaceProviderProps): ReactElement;

/** The provider's Surface; throws outside a <SurfaceProvider>. */
export declare function useSurface(): Surface;

/** Registers the definition while the component is mounted; functions are read from the latest
 *  render (no dependency array), availability is re-evaluated after every commit. Each action's
 *  `execute` gets its `inputSchema`'s type (a Standard Schema's output). */
export declare function useAgentComponent<const A extends readonly CapabilitySchema[] = CapabilitySchema[]>(
  def: ComponentDef<A>,
): void;

export interface UseConversationOptions extends Omit<ConversationOptions, "surface"> {
  /** Restore the conversation that was on screen before a reload (default true): its id is
   *  kept in localStorage once it has a message, and loaded back through `restore`. */
  restore?: boolean;
  /** The localStorage key of that id; name the app and the signed-in user in it when several
   *  share an origin (default: one key per `threadsEndpoint` and `endpoint`). A kept id the
   *  server no longer gives this user back is forgotten. */
  storageKey?: string;
  /** One executor across the tabs on this conversation (default: on, keyed by `storageKey`);
   *  `false` makes this tab run its own turns. */
  tabs?: ConversationOptions["tabs"];
}

/** The component's conversation store, created and freed with it, its state as React state.
 *  `conversation.reset()` starts a new conversation (and forgets the kept one). */
export declare function useConversation(options: UseConversationOptions): {
  state: ConversationState;
  conversation: Conversation;
  /** True while the kept conversation is being loaded after a reload. */
  restoring: boolean;
};

/** A confirmation request waiting for the user. */
export interface PendingConfirmation extends ConfirmRequest {
  approve(): void;
  deny(): void;
}

/** The live confirmation requests of conversations that were given no `confirm`. */
export declare function usePendingConfirmations(): readonly PendingConfirmation[];

export interface UseApprovalsOptions {
  /** The approvals API (default "/api/approvals"). */
  endpoint?: string;
}

export interface UseApprovalsResult {
  /** The conversation's pending approvals, oldest first. */
  approvals: readonly ApprovalCard[];
  /** Whether `approvals` is the server's list for every approval the conversation asked for. */
  loaded: boolean;
  /** Why the last list could not be read. */
  error?: ApprovalError;
  /** Decides through `POST /api/approvals/:id`; rejects with an ApprovalError (e.g.
   *  `APPROVAL_CONSUMED` when it was decided already). */
  approve(approvalId: string): Promise<ApprovalDecision>;
  deny(approvalId: string): Promise<ApprovalDecision>;
  /** The decision taken through this hook, with its receipt. */
  decision(approvalId: string): ApprovalDecision | undefined;
  isDeciding(approvalId: string): boolean;
  /** Reads the list again. */
  refresh(): Promise<void>;
}

/** The pending server approvals of a conversation (useConversation's `conversation`), read
 *  again when it changes and when a step is answered `approval-required`. After a decision the
 *  thread is restored when no turn runs, so it shows the receipt the server appended. */
export declare function useApprovals(conversation: Conversation, options?: UseApprovalsOptions): UseApprovalsResult;
