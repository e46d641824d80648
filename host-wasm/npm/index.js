// The package's browser entry: the generated bindings (dpas_host.js), an `init()` that loads
// the wasm once however often it is called, classes that say what to do when used before
// `init()`, definitions whose Standard Schemas become JSON Schemas (schema.js), and what the
// contract needs in plain JS.
import rawInit, {
  initSync as rawInitSync,
  Conversation as RawConversation,
  RegistrationHandle,
  Surface as RawSurface,
  runTurn as rawRunTurn,
  pageTools as rawPageTools,
  callPageTool as rawCallPageTool,
} from "./dpas_host.js";
import { wireDefinition } from "./schema.js";
import { TabGroup, tabsSupported } from "./tabs.js";

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

  /** Every registration moves `surfaceVersion`; a refused duplicate does not, and says so.
   *  Standard Schemas in `def` (and in the handle's `update`) are read through schema.js. */
  register(def) {
    const before = this.surfaceVersion;
    const handle = super.register(wireDefinition(def));
    const update = handle.update;
    handle.update = (next) => update.call(handle, wireDefinition(next));
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
  #endpoint;
  /** The tabs working on this conversation (tabs.js), or null: this tab runs everything. */
  #tabs = null;
  #listeners = new Set();
  #source = null;
  #shown = null;

  constructor(options) {
    assertReady();
    const { tabs = true, ...rest } = options;
    const grouped = tabs !== false && tabsSupported();
    // The group is created once the wasm store exists; until then nothing can call these.
    const link = { group: null };
    super(
      grouped
        ? {
            ...rest,
            confirm: rest.confirm && ((request) => link.group.confirm(request)),
            onEvent: (event) => link.group.event(event),
          }
        : rest,
    );
    this.#endpoint = options.endpoint;
    super.subscribe(() => (this.#tabs ? this.#tabs.localChanged() : this.#changed()));
    if (grouped) {
      const key = tabs.key ?? `${options.threadsEndpoint ?? "/api/threads"} ${options.endpoint}`;
      this.#tabs = link.group = new TabGroup(key, {
        local: () => super.getState(),
        run: (op, args) => this.#run(op, args),
        confirm: rest.confirm ?? null,
        event: (event) => rest.onEvent?.(event),
        changed: () => this.#changed(),
      });
    }
  }

  #changed() {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // One listener's throw does not keep the others from hearing.
      }
    }
  }

  /** The state of the conversation every tab of the group shows, with this tab's role; the
   *  same object until it changes. */
  getState() {
    const source = this.#tabs ? this.#tabs.state() : super.getState();
    const tabRole = this.#tabs ? this.#tabs.role : "executor";
    if (source !== this.#source || this.#shown?.tabRole !== tabRole) {
      this.#source = source;
      this.#shown = { ...source, tabRole };
    }
    return this.#shown;
  }

  subscribe(listener) {
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** What this tab runs itself: everything without a group, only the executor's part in one. */
  #run(op, args) {
    switch (op) {
      case "send":
        return super.send(...args);
      case "resume":
        return super.resume();
      case "restore":
        return super.restore(...args);
      case "cancel":
        this.#stopServerStep();
        return super.cancel();
      case "reset":
        this.#stopServerStep();
        return super.reset();
      default:
        throw new TypeError(`unknown conversation operation ${op}`);
    }
  }

  /** A server step outlives its connection: stopping a running turn also asks the server to
   *  stop this conversation's step in flight (`POST <endpoint>/cancel`). */
  #stopServerStep() {
    const { conversationId, isRunning } = super.getState();
    if (!isRunning) return;
    fetch(`${this.#endpoint}/cancel`, {
      method: "POST",
      credentials: "include",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ conversationId }),
    }).catch(() => {});
  }

  send(text) {
    return this.#tabs ? this.#tabs.call("send", [text]) : super.send(text);
  }

  resume() {
    return this.#tabs ? this.#tabs.call("resume") : super.resume();
  }

  restore(conversationId) {
    return this.#tabs ? this.#tabs.call("restore", [conversationId]) : super.restore(conversationId);
  }

  cancel() {
    if (this.#tabs && !this.#tabs.executes) {
      this.#tabs.call("cancel").catch(() => {});
    } else {
      this.#run("cancel", []);
    }
  }

  reset() {
    if (this.#tabs && !this.#tabs.executes) {
      this.#tabs.call("reset").catch(() => {});
    } else {
      this.#run("reset", []);
    }
  }

  free() {
    this.#tabs?.close();
    this.#tabs = null;
    this.#listeners.clear();
    super.free();
  }
}

export function runTurn(options) {
  if (!ready) return Promise.reject(new Error(NOT_READY));
  return rawRunTurn(options);
}

export function pageTools(options) {
  assertReady();
  return rawPageTools(options);
}

export function callPageTool(options) {
  if (!ready) return Promise.reject(new Error(NOT_READY));
  return rawCallPageTool(options);
}

/** The browser's WebMCP entry: `document.modelContext`, or the older `navigator.modelContext`. */
function modelContextOf(given) {
  if (given) return given;
  const candidates = [globalThis.document?.modelContext, globalThis.navigator?.modelContext];
  return candidates.find((c) => typeof c?.registerTool === "function") ?? null;
}

/** What an agent sees of a call: the result the model would get, as MCP tool content. */
function toolContent({ ok, result }) {
  return { content: [{ type: "text", text: JSON.stringify(result) }], isError: !ok };
}

/** Registers the surface's capabilities with the browser's WebMCP (`document.modelContext`,
 *  else `navigator.modelContext`) under the step loop's rules: the capabilities a step on the
 *  current pathname would offer (its route's scope, available ones only), kept in step with
 *  the surface; a call runs through the registry, and a confirmation-required capability asks
 *  `confirm` as a turn does (no `confirm`: denied). Returns the function that unregisters
 *  them all. Without WebMCP in this browser it registers nothing (`active` is false). */
export function exposeWebMcp(surface, options = {}) {
  assertReady();
  const context = modelContextOf(options.modelContext);
  const registered = new Map();
  let unsubscribe = null;
  const stop = () => {
    unsubscribe?.();
    for (const entry of registered.values()) entry.unregister();
    registered.clear();
  };
  stop.active = context !== null;
  if (!context) return stop;
  const pathname = () => options.pathname?.() ?? globalThis.location?.pathname ?? "/";
  const { routeScopes } = options;
  // A tool whose description, schema or hints change is registered again.
  const keyOf = (tool) => JSON.stringify([tool.description, tool.inputSchema, tool.readOnly, tool.untrusted === true]);
  const register = (tool) => {
    const controller = new AbortController();
    const done = Promise.resolve(
      context.registerTool(
        {
          name: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema,
          annotations: { readOnlyHint: tool.readOnly, untrustedContentHint: tool.untrusted === true },
          execute: async (input) =>
            toolContent(
              await rawCallPageTool({
                surface,
                pathname: pathname(),
                routeScopes,
                name: tool.name,
                input: input ?? {},
                confirm: options.confirm,
              }),
            ),
        },
        { signal: controller.signal },
      ),
    );
    done.catch((error) => console.warn(`@dpas/host: WebMCP refused "${tool.name}":`, error));
    return {
      key: keyOf(tool),
      unregister: () => {
        controller.abort();
        // The older API unregisters by name.
        if (typeof context.unregisterTool === "function") done.then(() => context.unregisterTool(tool.name), () => {});
      },
    };
  };
  let queued = false;
  const sync = () => {
    queued = false;
    const tools = rawPageTools({ surface, pathname: pathname(), routeScopes });
    const next = new Map(tools.map((tool) => [tool.name, tool]));
    for (const [name, entry] of registered) {
      const tool = next.get(name);
      if (!tool || entry.key !== keyOf(tool)) {
        entry.unregister();
        registered.delete(name);
      }
    }
    for (const tool of tools) if (!registered.has(tool.name)) registered.set(tool.name, register(tool));
  };
  // Mounts, unmounts and availability changes move what a step would offer.
  unsubscribe = surface.subscribe((event) => {
    if (event.type === "invocation-settled" || queued) return;
    queued = true;
    queueMicrotask(sync);
  });
  sync();
  return stop;
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

/** An action definition, returned as it is: for TypeScript, `execute`'s input is typed from
 *  `inputSchema` (index.d.ts). */
export function defineAction(def) {
  return def;
}

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
