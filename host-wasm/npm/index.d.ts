// The package's main entry: everything the generated bindings declare, `Surface` and
// `RegistrationHandle` with their definitions' types inferred, and what the contract needs in
// plain JS.
import {
  Surface as GeneratedSurface,
  RegistrationHandle as GeneratedRegistrationHandle,
  type ActionDef,
  type CapabilitySchema,
  type ComponentDef,
  type ConfirmRequest,
  type ToolCallView,
} from "./dpas_host.js";
export * from "./dpas_host.js";
export { default } from "./dpas_host.js";

// ---- One executor across tabs (tabs.js) ---------------------------------------------------

/** What this tab does for its conversation: the executor runs its turns and browser tools; a
 *  follower mirrors the executor's state and sends its messages there. */
export type TabRole = "executor" | "follower";

/** The tabs of this origin on the same `key` (default: `threadsEndpoint` and `endpoint`)
 *  share one executor. */
export interface TabsOptions {
  key?: string;
}

/** The second argument a `confirm` callback gets from the package's `Conversation`. */
export interface ConfirmContext {
  /** Aborts when the request was answered in another tab (or the turn ended there). */
  signal: AbortSignal;
  /** True in a follower: the request is the executor's, and an answer here goes to it. */
  mirrored: boolean;
}

declare module "./dpas_host.js" {
  interface ConversationOptions {
    /** One executor across the tabs on the same conversation key (Web Locks and
     *  BroadcastChannel; on by default, and a single tab where either is missing); `false`
     *  makes this tab run its own turns. Read once. */
    tabs?: boolean | TabsOptions;
  }
  interface ConversationState {
    /** This tab's part ("executor" without tabs). */
    tabRole: TabRole;
  }
}

/** The agent surface registry of this page. */
export declare class Surface extends GeneratedSurface {
  /** Registers a mounted component. Each action's `execute` gets its `inputSchema`'s type
   *  (a Standard Schema's output). Throws on a malformed definition (`error.code` says why,
   *  e.g. UNSUPPORTED_SCHEMA for a Standard Schema without `~standard.jsonSchema`); a second
   *  live instance of the same type and instanceId gets a dead handle and registers nothing. */
  register<const A extends readonly CapabilitySchema[] = CapabilitySchema[]>(def: ComponentDef<A>): RegistrationHandle;
}

/** Returned by `Surface.register`. */
export interface RegistrationHandle extends GeneratedRegistrationHandle {
  /** Replaces the definition (same type/instance keeps the registration). */
  update<const A extends readonly CapabilitySchema[] = CapabilitySchema[]>(def: ComponentDef<A>): void;
}
export declare const RegistrationHandle: typeof GeneratedRegistrationHandle;

/** An action definition with `execute`'s input typed from `inputSchema`, for a definition
 *  written apart from `register`/`useAgentComponent` (e.g. in a list of its own). Returns it. */
export declare function defineAction<S extends CapabilitySchema>(def: ActionDef<S>): ActionDef<S>;

/** The capability error codes a handler may throw (agent-surface's closed set). */
export type CapabilityErrorCode =
  | "CAPABILITY_NOT_FOUND"
  | "CAPABILITY_NOT_AVAILABLE"
  | "AMBIGUOUS_INSTANCE"
  | "COMPONENT_UNMOUNTED"
  | "STALE_CAPABILITY"
  | "INVOCATION_CONFLICT"
  | "INVALID_INPUT"
  | "NOT_AUTHENTICATED"
  | "NOT_AUTHORIZED"
  | "PRECONDITION_FAILED"
  | "CONFIRMATION_REQUIRED"
  | "CONFIRMATION_INVALID"
  | "RATE_LIMITED"
  | "TIMEOUT"
  | "CANCELLED"
  | "EXECUTION_FAILED";

/** What the model may do after a refusal. */
export type RetryHint = "no" | "yes" | "after-refresh" | "after-delay" | "with-confirmation" | "with-changes";

/** A structured refusal from a handler: thrown from `execute`/`read` or an executor, it reaches
 *  the model as `code`, `retry` and `details` instead of a plain EXECUTION_FAILED. */
export declare class CapabilityError extends Error {
  readonly code: CapabilityErrorCode;
  readonly retry: RetryHint;
  readonly details?: unknown;
  constructor(code: CapabilityErrorCode, message: string, retry?: RetryHint, details?: unknown);
}

/** The input schema of an action that takes no arguments. */
export declare const EMPTY_INPUT_SCHEMA: {
  readonly type: "object";
  readonly properties: { readonly [key: string]: never };
  readonly additionalProperties: false;
};

export interface ExposeWebMcpOptions {
  /** Route → scope floor, as in RunTurnOptions: what a step on the pathname would offer. */
  routeScopes?: { [route: string]: string[] };
  /** The pathname the tools are listed for (default: `location.pathname`). */
  pathname?: () => string;
  /** Asked for `confirmation: "required"` capabilities, as a turn asks; without it they are
   *  denied (the typed CONFIRMATION_INVALID result). */
  confirm?: (request: import("./dpas_host.js").ConfirmRequest) => Promise<boolean>;
  /** The WebMCP entry to register with (default: `document.modelContext`, else
   *  `navigator.modelContext`). */
  modelContext?: {
    registerTool(tool: object, options?: { signal?: AbortSignal }): unknown;
    unregisterTool?(name: string): unknown;
  };
}

/** Unregisters every tool; `active` is false when the browser offers no WebMCP. */
export interface WebMcpHandle {
  (): void;
  readonly active: boolean;
}

/** Registers the surface's capabilities with the browser's WebMCP under the step loop's rules
 *  (the pathname's scope, available ones only, confirmation as a turn asks), kept in step with
 *  the surface. Off until called. */
export declare function exposeWebMcp(
  surface: import("./dpas_host.js").Surface,
  options?: ExposeWebMcpOptions,
): WebMcpHandle;

// ---- Approvals (`/api/approvals`) ------------------------------------------------------------

export type ApprovalStatus =
  | "pending"
  | "approved"
  | "rejected"
  | "expired"
  | "cancelled"
  | "consumed"
  | "stale"
  | "interrupted";

/** An approval card, as `GET /api/approvals` lists it (the caller's own requests only). */
export interface ApprovalCard {
  id: string;
  capabilityId: string;
  status: ApprovalStatus;
  /** Where the call came from: a model step, MCP, the app's own `/rpc`. */
  surface: string;
  reasons: string[];
  risk: string;
  /** The validated input: exactly what runs once approved. */
  input: unknown;
  requestedAt: string;
  expiresAt: string;
  /** The conversation the call was requested in (a model step's). */
  conversationId?: string;
  /** What the call acts on, as it was when requested (the server refuses if it changed). */
  target?: unknown;
  /** How the approved run ended: `completed`, `failed`. */
  outcome?: string;
  /** Why a `stale`, `interrupted` or `cancelled` record did not run. */
  message?: string;
  decision?: { status: "approved" | "rejected"; approver: string; decidedAt: string };
}

/** The receipt of a decision: the text the server also appends to the conversation. */
export interface ApprovalReceipt {
  text: string;
  /** False when an approved call did not complete (cancelled, stale, failed). */
  ok: boolean;
}

/** What a decision came to (`POST /api/approvals/:id`). */
export type ApprovalResolution =
  | { status: "rejected" }
  /** An MCP session's request: that session runs it. */
  | { status: "approved" }
  | { status: "completed"; output: unknown }
  | { status: "pending" }
  | { status: "cancelled" | "stale" | "failed"; error: { message: string } };

export interface ApprovalDecision {
  approvalId: string;
  approved: boolean;
  receipt: ApprovalReceipt;
  resolution: ApprovalResolution;
}

/** The codes the approvals API answers with, and `TRANSPORT_FAILED` when it did not answer
 *  (or not in the contract's `{error:{code,message}}`); the server's other table codes pass
 *  through as they are. */
export type ApprovalErrorCode =
  | "APPROVAL_CONSUMED"
  | "APPROVAL_REJECTED"
  | "APPROVAL_EXPIRED"
  | "APPROVAL_CANCELLED"
  | "APPROVAL_STALE"
  | "APPROVAL_INTERRUPTED"
  | "APPROVAL_PENDING"
  | "BAD_REQUEST"
  | "NOT_FOUND"
  | "UNAUTHENTICATED"
  | "TOKEN_MISSING"
  | "TOKEN_INVALID"
  | "TOKEN_EXPIRED"
  | "RATE_LIMITED"
  | "INTERNAL_ERROR"
  | "TRANSPORT_FAILED"
  | (string & {});

export declare class ApprovalError extends Error {
  readonly code: ApprovalErrorCode;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  constructor(code: ApprovalErrorCode, message: string, status?: number);
}

// ---- What a tool call is waiting for -----------------------------------------------------------

export type ToolCallPhase =
  | { phase: "running" }
  | { phase: "awaiting-confirmation"; confirmation: ConfirmRequest }
  /** `card` once the conversation's pending list has it. */
  | { phase: "awaiting-approval"; approvalId: string; message: string; card?: ApprovalCard }
  /** `decision` when it was decided through this page's useApprovals. */
  | { phase: "decided"; approvalId: string; decision?: ApprovalDecision }
  /** A server call's `data`, a browser call's output. */
  | { phase: "done"; output: unknown }
  | { phase: "failed"; error: { code: string; message: string; retry?: string; retryable?: boolean; details?: unknown } };

/** What `toolCallPhase` reads besides the call; each part is optional. */
export interface ToolCallPhaseContext {
  confirmations?: readonly ConfirmRequest[];
  approvals?: {
    approvals: readonly ApprovalCard[];
    loaded: boolean;
    decision(approvalId: string): ApprovalDecision | undefined;
  };
}

/** What a tool call is waiting for or came to. Without `approvals`, an `approval-required`
 *  answer is `awaiting-approval` whether or not it has been decided since. */
export declare function toolCallPhase(call: ToolCallView, context?: ToolCallPhaseContext): ToolCallPhase;
