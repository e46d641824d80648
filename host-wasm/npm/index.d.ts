// The package's main entry: everything the generated bindings declare, plus the two values of
// the contract that are plain JS.
export * from "./dpas_host.js";
export { default } from "./dpas_host.js";

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
