// The package's browser entry: the generated bindings (dpas_host.js), an `init()` that loads
// the wasm once however often it is called, classes that say what to do when used before
// `init()`, and what the contract needs in plain JS.
import rawInit, {
  initSync as rawInitSync,
  Conversation as RawConversation,
  RegistrationHandle,
  Surface as RawSurface,
  runTurn as rawRunTurn,
} from "./dpas_host.js";

export { RegistrationHandle };

const NOT_READY =
  "@dpas/host is not initialised: call `await init()` (the package's default export) before " +
  "creating a Surface or a Conversation or calling runTurn, e.g. in an effect, or render under " +
  "<SurfaceProvider> from @dpas/host/react, which does it for you.";

let ready = false;
let loading = null;

function assertReady() {
  if (!ready) throw new Error(NOT_READY);
}

/** Loads and instantiates the wasm (next to this module unless told otherwise), once. */
export default function init(input) {
  if (loading === null) {
    loading = rawInit(input).then(
      (exports) => {
        ready = true;
        return exports;
      },
      (error) => {
        loading = null;
        throw error;
      },
    );
  }
  return loading;
}

/** Instantiates the wasm synchronously from its bytes or a compiled module. */
export function initSync(input) {
  const exports = rawInitSync(input);
  ready = true;
  loading ??= Promise.resolve(exports);
  return exports;
}

export class Surface extends RawSurface {
  constructor(options) {
    assertReady();
    super(options);
  }

  /** Every registration moves `surfaceVersion`; a refused duplicate does not, and says so. */
  register(def) {
    const before = this.surfaceVersion;
    const handle = super.register(def);
    if (this.surfaceVersion === before) {
      console.warn(
        `@dpas/host: Surface.register refused "${def.type}" (instanceId "${def.instanceId ?? "default"}"): ` +
          "that component is already registered and not unregistered, so the returned handle does " +
          "nothing. Give each live instance its own instanceId, or unregister the first.",
      );
    }
    return handle;
  }
}

export class Conversation extends RawConversation {
  constructor(options) {
    assertReady();
    super(options);
  }
}

export function runTurn(options) {
  if (!ready) return Promise.reject(new Error(NOT_READY));
  return rawRunTurn(options);
}

/** A structured refusal from a handler: the host reports `code`, `retry` and `details` to the
 *  model instead of a plain EXECUTION_FAILED. */
export class CapabilityError extends Error {
  constructor(code, message, retry = "no", details) {
    super(message);
    this.name = "CapabilityError";
    this.code = code;
    this.retry = retry;
    if (details !== undefined) this.details = details;
  }
}

/** The input schema of an action that takes no arguments. */
export const EMPTY_INPUT_SCHEMA = Object.freeze({
  type: "object",
  properties: Object.freeze({}),
  additionalProperties: false,
});

/** A refusal of the approvals API (`/api/approvals`): the contract's `code` (e.g.
 *  `APPROVAL_CONSUMED`, `NOT_FOUND`, `UNAUTHENTICATED`; `TRANSPORT_FAILED` when no answer
 *  came) and the HTTP `status` (0 without an answer). */
export class ApprovalError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.name = "ApprovalError";
    this.code = code;
    this.status = status;
  }
}

/** What a tool call is waiting for or came to, from its view and, when given, the pending
 *  confirmations (usePendingConfirmations) and the conversation's approvals (useApprovals). */
export function toolCallPhase(call, { confirmations, approvals } = {}) {
  const result = call.result;
  if (call.state === "running") {
    const confirmation = confirmations?.find((c) => c.toolCallId === call.toolCallId);
    return confirmation ? { phase: "awaiting-confirmation", confirmation } : { phase: "running" };
  }
  if (call.state === "error") {
    const error = result && typeof result === "object" ? result.error : undefined;
    return {
      phase: "failed",
      error:
        error && typeof error === "object"
          ? error
          : { code: "TOOL_NOT_EXECUTED", message: "The turn ended before this call had a result." },
    };
  }
  if (call.executor === "server" && result?.status === "approval-required") {
    const approvalId = result.approvalId;
    const decision = approvals?.decision(approvalId);
    if (decision) return { phase: "decided", approvalId, decision };
    const card = approvals?.approvals.find((a) => a.id === approvalId);
    // Listed once the list has loaded, or it was decided before (another tab, a reload).
    if (approvals?.loaded && !card) return { phase: "decided", approvalId };
    return { phase: "awaiting-approval", approvalId, message: result.message, card };
  }
  return { phase: "done", output: call.executor === "server" && result?.status === "ok" ? result.data : result };
}
