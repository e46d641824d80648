export type JsonSchema = { [key: string]: unknown };
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// ---- Surface registry ------------------------------------------------------------------

export type Confirmation = "never" | "optional" | "required";
export type ViewEffect = "local-state" | "navigation";
/** Domain reference effects. */
export type DomainEffect = "read" | "server-mutation" | "destructive" | "external"
  /** agent-surface's names for `read` and `external`, accepted too. */
  | "server-query" | "external-side-effect";

export interface Availability {
  /** Master switch; default true. */
  enabled?: boolean;
  /** Evaluated at every snapshot; unavailable when it returns false. */
  when?: () => boolean;
  /** Shown to the model when unavailable (volatile state, never in the tool block). */
  unavailableReason?: string | (() => string);
}

/** Handed to every handler call. `signal` aborts when the call's deadline passes (the tool
 *  result is then TIMEOUT, retry "after-refresh": it may or may not have happened) or when
 *  the turn is cancelled (CANCELLED); the turn goes on either way. */
export interface HandlerContext { signal: AbortSignal }

export interface ObservationDef {
  name: string;                       // lowerCamel, e.g. "readState"
  description: string;
  outputSchema: JsonSchema;
  read: (context: HandlerContext) => unknown | Promise<unknown>;
  /** Deadline of one read (default 5000); past it the call is TIMEOUT and `signal` aborts. */
  timeoutMs?: number;
  availability?: Availability;
  /** The read returns untrusted content (text users typed, pages from elsewhere): the model
   *  gets it fenced as data, and an action it proposes after reading it waits for `confirm`. */
  untrusted?: boolean;
}

export interface ActionDef {
  name: string;                       // e.g. "setFilters"
  description: string;
  effect: ViewEffect;
  confirmation?: Confirmation;        // default "never"
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  idempotent?: boolean;
  /** Resolve with the output (or nothing: the result is then {done:true}). Throwing is
   *  EXECUTION_FAILED, unless the thrown value carries a capability error `code` (e.g.
   *  "PRECONDITION_FAILED") and optionally `retry`/`details`: that error is passed through. */
  execute: (input: { [key: string]: unknown }, context: HandlerContext) => unknown | Promise<unknown>;
  /** Deadline of one call (default 10000); past it the call is TIMEOUT and `signal` aborts. */
  timeoutMs?: number;
  availability?: Availability;
  /** Its result is untrusted content, as `ObservationDef.untrusted`. */
  untrusted?: boolean;
}

/** A contextual reference to a governed server procedure (`domain:<path>`). */
export interface ProcedureDef {
  path: string;                       // e.g. "update-collection-status"
  description: string;
  effect: DomainEffect;
  confirmation?: Confirmation;        // escalate-only above the effect's floor
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** The keys the live UI supplies (e.g. {invoiceId: 21}); removed from the model's schema. */
  bind?: () => { [key: string]: unknown };
  /** Bound keys the model may override; every other bound key is locked. */
  overridableFields?: string[];
  /** Live contextual text, sent as the volatile `note`. */
  describe?: () => string | undefined;
  /** Deadline of one executor call (default 30000). */
  timeoutMs?: number;
  availability?: Availability;
}

export interface ComponentDef {
  type: string;                       // e.g. "invoices.pending"
  instanceId?: string;
  description: string;
  priority?: number;
  enabled?: boolean;
  observations?: ObservationDef[];
  actions?: ActionDef[];
  procedures?: ProcedureDef[];
}


/** The app executes domain references (typically its own POST /rpc/<path>). */
export type ProcedureExecutor = (
  path: string,
  input: { [key: string]: unknown },
  context: HandlerContext & { invocationId: string; confirmation?: string },
) => Promise<unknown>;

export interface SurfaceInit { executeProcedure?: ProcedureExecutor }


export type SurfaceEvent =
  | { type: "surface-changed"; surfaceVersion: number }
  | { type: "availability-changed"; surfaceVersion: number; capabilityIds: string[] }
  | { type: "invocation-settled"; capabilityId: string; invocationId: string; ok: boolean };

// ---- Wire types (as on the wire) ---------------------------------------------------------

export type ModelMessage =
  | { role: "system" | "user" | "assistant" | "tool"; content: string | Array<{ type: string; [key: string]: unknown }> };

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedInputTokens?: number;         // subset of input
  reasoningTokens?: number;           // subset of output
  cacheWriteInputTokens?: number;     // subset of input
  reportedSteps: number;
}

/** Every frame type of the protocol (step-start, text-delta, reasoning-delta, tool-call,
 *  tool-result, inspector, step-finish, error), exactly as streamed. */
export type Frame = { type: string; [key: string]: unknown };

export interface HostError { code: string; message: string }

// ---- One turn ------------------------------------------------------------------------------

export interface ConfirmRequest {
  toolCallId: string;
  canonicalId: string;                // e.g. "domain:update-collection-status"
  description: string;
  /** The same text as `description` (the core's name). */
  summary: string;
  wireName: string;
  /** The capability's effect, e.g. "destructive". */
  effect: string;
  input: { [key: string]: unknown };
}

export type TurnEvent =
  | { type: "step-start"; stepIndex: number }
  | { type: "tool-call"; toolCallId: string; wireName: string; canonicalId: string; executor: "server" | "browser"; input: unknown }
  | { type: "tool-result"; toolCallId: string; wireName: string; canonicalId: string; executor: "server" | "browser"; ok: boolean; result: unknown }
  | { type: "text-delta"; text: string }
  | { type: "reasoning-delta"; text: string }
  | { type: "usage"; usage: Usage }
  | { type: "inspector"; frame: Frame }
  | { type: "reconcile" }               // a server-side write succeeded (O2)
  | { type: "message-boundary" };

export interface RunTurnOptions {
  endpoint: string;                   // "/agent/chat"
  surface: Surface;
  conversationId: string;
  turnId?: string;
  /** The whole history including the new user message. */
  messages: ModelMessage[];
  pathname: string;
  /** Route → scope floor, e.g. {"/receivables/pending": ["invoices","reporting","collections"]};
   *  the shell scope "app" is prepended to a non-empty floor. */
  routeScopes?: { [route: string]: string[] };
  catalogMode?: "direct" | "meta";
  modelId?: string;
  signal?: AbortSignal;
  /** Settle predicate: the committed location equals the window's (J6). */
  until?: () => boolean;
  /** Asked between requests for `confirmation: "required"` capabilities; false = denied. */
  confirm?: (request: ConfirmRequest) => Promise<boolean>;
  onFrame?: (frame: Frame) => void;
  onEvent?: (event: TurnEvent) => void;
}

export interface TurnResult {
  status: "completed" | "cancelled" | "error";
  messages: ModelMessage[];
  usage?: Usage;
  error?: HostError;
}


// ---- A conversation store for assistant-ui's external-store runtime ------------------------

export interface ToolCallView {
  toolCallId: string;
  wireName: string;
  canonicalId: string;
  executor: "server" | "browser";
  input: unknown;
  state: "running" | "done" | "error";
  result?: unknown;
}

/** A part of a message: text (markdown) and reasoning with channel markers removed, or a
 *  tool call. Empty text and reasoning are left out. */
export type ChatMessagePart =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | ({ type: "tool-call" } & ToolCallView);

export interface ChatMessageView {
  id: string;
  role: "user" | "assistant";
  /** What the model produced, in the order it did: render these. */
  parts: ChatMessagePart[];
  /** The text parts joined (markdown), channel markers never included. */
  text: string;
  /** The reasoning parts joined, kept apart from the answer. */
  reasoning: string;
  /** The tool-call parts. */
  toolCalls: ToolCallView[];
}

export interface InspectorEvent { lane: string; eventType: string; summary: string; at: number; data?: unknown }

export interface ConversationState {
  conversationId: string;
  messages: ChatMessageView[];
  isRunning: boolean;
  turnUsage?: Usage;
  conversationUsage?: Usage;
  inspector: InspectorEvent[];        // at most 400, oldest evicted
  error?: HostError;
}

export interface ConversationOptions {
  endpoint: string;                   // "/agent/chat"
  threadsEndpoint?: string;           // "/api/threads"
  surface: Surface;
  getPathname: () => string;
  routeScopes?: { [route: string]: string[] };
  until?: () => boolean;
  confirm?: (request: ConfirmRequest) => Promise<boolean>;
  modelId?: string;
  catalogMode?: "direct" | "meta";
  onEvent?: (event: TurnEvent) => void;
}
