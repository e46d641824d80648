export type JsonSchema = { [key: string]: unknown };
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The Standard Schema v1 interface (standardschema.dev), copied as the spec asks rather than
 *  depended on: zod 4, Valibot and ArkType schemas implement it. As a capability's schema it
 *  also needs the Standard JSON Schema converter, `~standard.jsonSchema` (zod 4.2 or later,
 *  ArkType 2.2 or later, Valibot through `toStandardJsonSchema`); registering one without it
 *  throws UNSUPPORTED_SCHEMA. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown, options?: Options | undefined) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }
  interface Options { readonly libraryOptions?: Record<string, unknown> | undefined }
  type Result<Output> = SuccessResult<Output> | FailureResult;
  interface SuccessResult<Output> { readonly value: Output; readonly issues?: undefined }
  interface FailureResult { readonly issues: ReadonlyArray<Issue> }
  interface Issue { readonly message: string; readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined }
  interface PathSegment { readonly key: PropertyKey }
  interface Types<Input = unknown, Output = Input> { readonly input: Input; readonly output: Output }
  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["input"];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["output"];
}

/** A capability's `inputSchema` or `outputSchema`: a JSON Schema, or a Standard Schema that the
 *  package converts to one (`~standard.jsonSchema`, once per schema object). */
export type CapabilitySchema = JsonSchema | StandardSchemaV1;

/** What an action's `execute` receives for its `inputSchema`: a Standard Schema's output (the
 *  value its `validate` returned), or the JSON object the model sent for a JSON Schema. */
export type HandlerInput<S> = [S] extends [StandardSchemaV1]
  ? StandardSchemaV1.InferOutput<S>
  : { [key: string]: unknown };

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
  /** What `read` returns; absent: anything. */
  outputSchema?: CapabilitySchema;
  read: (context: HandlerContext) => unknown | Promise<unknown>;
  /** Deadline of one read (default 5000); past it the call is TIMEOUT and `signal` aborts. */
  timeoutMs?: number;
  availability?: Availability;
}

/** `S` is the type of `inputSchema`, inferred where the definition is written inline in
 *  `register`, `update`, `useAgentComponent` or `defineAction`. */
export interface ActionDef<S extends CapabilitySchema = CapabilitySchema> {
  name: string;                       // e.g. "setFilters"
  description: string;
  effect: ViewEffect;
  confirmation?: Confirmation;        // default "never"
  /** A Standard Schema also validates the input (`~standard.validate`) before `execute` runs:
   *  its issues are the tool result INVALID_INPUT, and `execute` is not called. */
  inputSchema: S;
  outputSchema?: CapabilitySchema;
  idempotent?: boolean;
  /** Resolve with the output (or nothing: the result is then {done:true}). Throwing is
   *  EXECUTION_FAILED, unless the thrown value carries a capability error `code` (e.g.
   *  "PRECONDITION_FAILED") and optionally `retry`/`details`: that error is passed through. */
  execute(input: HandlerInput<S>, context: HandlerContext): unknown | Promise<unknown>;
  /** Deadline of one call (default 10000); past it the call is TIMEOUT and `signal` aborts. */
  timeoutMs?: number;
  availability?: Availability;
}

/** A contextual reference to a governed server procedure (`domain:<path>`). */
export interface ProcedureDef {
  path: string;                       // e.g. "update-collection-status"
  description: string;
  effect: DomainEffect;
  confirmation?: Confirmation;        // escalate-only above the effect's floor
  inputSchema: CapabilitySchema;
  outputSchema?: CapabilitySchema;
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

/** `A` is the tuple of the actions' input schema types, inferred where the definition is
 *  written inline, so each `execute` gets its own schema's input type. */
export interface ComponentDef<A extends readonly CapabilitySchema[] = CapabilitySchema[]> {
  type: string;                       // e.g. "invoices.pending"
  instanceId?: string;
  description: string;
  priority?: number;
  enabled?: boolean;
  observations?: ObservationDef[];
  actions?: { [K in keyof A]: ActionDef<A[K]> };
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
  /** The step's connection broke before its end; the same request goes out again after
   *  `delayMs` and the server answers it from its step record (at most 3 attempts). */
  | { type: "step-retry"; stepIndex: number; attempt: number; delayMs: number }
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


// ---- The WebMCP door --------------------------------------------------------------------------

/** A capability as a step on the pathname would offer it (available ones only). */
export interface PageTool {
  name: string;                       // the wire name, e.g. "view_invoices__pending__setFilters"
  canonicalId: string;
  description: string;
  inputSchema: JsonSchema;
  /** An observation or a domain read: calling it changes nothing. */
  readOnly: boolean;
  confirmation: Confirmation;
  /** The capability says its results are content the app does not vouch for. */
  untrusted?: boolean;
}

export interface PageToolsOptions {
  surface: Surface;
  pathname: string;
  /** As in RunTurnOptions: the pathname's scope floor. */
  routeScopes?: { [route: string]: string[] };
}

export interface CallPageToolOptions extends PageToolsOptions {
  name: string;
  input?: unknown;
  /** Asked for `confirmation: "required"` capabilities; without it they are denied. */
  confirm?: (request: ConfirmRequest) => Promise<boolean>;
}

/** `result` is what the model would receive for the call. */
export interface PageToolResult { ok: boolean; result: unknown }


// ---- A conversation store for assistant-ui's external-store runtime ------------------------

/** A governed server capability's answer, the runtime's result envelope: the result of a
 *  server tool call, and the body `POST /rpc/<id>` answers. */
export type ResultEnvelope<T = unknown> = OkEnvelope<T> | ApprovalRequiredEnvelope | ErrorEnvelope;
export interface OkEnvelope<T = unknown> { status: "ok"; data: T }
/** Nothing ran: the user decides through `/api/approvals/:id` (`useApprovals`). */
export interface ApprovalRequiredEnvelope { status: "approval-required"; approvalId: string; message: string }
export interface ErrorEnvelope { status: "error"; error: RuntimeError }
/** A refusal of the server's runtime, e.g. `INPUT_INVALID`, `POLICY_DENIED`, `EXECUTION_FAILED`. */
export interface RuntimeError {
  code: string;
  message: string;
  retryable: boolean;
  /** `INPUT_INVALID` only: the issues' paths and messages. */
  details?: unknown;
}
/** A result the host wrote (`NO_SUCH_TOOL`, `TOOL_FAILED`, `TOOL_NOT_EXECUTED`) or a browser
 *  capability refused with (`CAPABILITY_NOT_AVAILABLE`, `INVALID_INPUT`, …). */
export interface ToolErrorResult {
  error: { code: string; message: string; retry?: string; details?: unknown };
}

interface ToolCallBase {
  toolCallId: string;
  wireName: string;
  canonicalId: string;
  input: unknown;
}

/** A call the server ran: its result is the runtime's envelope. `done` is `ok` or
 *  `approval-required`; `error` has no result when the turn ended before one came. */
export type ServerToolCallView = ToolCallBase & { executor: "server" } & (
  | { state: "running"; result?: undefined }
  | { state: "done"; result: OkEnvelope | ApprovalRequiredEnvelope }
  | { state: "error"; result?: ErrorEnvelope | ToolErrorResult }
);

/** A call this browser ran: `done` carries the capability's output. */
export type BrowserToolCallView = ToolCallBase & { executor: "browser" } & (
  | { state: "running"; result?: undefined }
  | { state: "done"; result: unknown }
  | { state: "error"; result?: ToolErrorResult }
);

/** One tool call, discriminated by `executor` and `state`. */
export type ToolCallView = ServerToolCallView | BrowserToolCallView;

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
