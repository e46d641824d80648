// The package's main entry: everything the generated bindings declare, `Surface` and
// `RegistrationHandle` with their definitions' types inferred, and the values of the contract
// that are plain JS.
import {
  Surface as GeneratedSurface,
  RegistrationHandle as GeneratedRegistrationHandle,
  type ActionDef,
  type CapabilitySchema,
  type ComponentDef,
} from "./dpas_host.js";
export * from "./dpas_host.js";
export { default } from "./dpas_host.js";

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
