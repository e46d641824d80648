// The package's browser entry: the generated bindings (dpas_host.js), an `init()` that loads
// the wasm once however often it is called, classes that say what to do when used before
// `init()`, definitions whose Standard Schemas become JSON Schemas (schema.js), and the two
// values of the contract that are plain JS.
import rawInit, {
  initSync as rawInitSync,
  Conversation as RawConversation,
  RegistrationHandle,
  Surface as RawSurface,
  runTurn as rawRunTurn,
} from "./dpas_host.js";
import { wireDefinition } from "./schema.js";

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

/** An action definition, returned as it is: for TypeScript, `execute`'s input is typed from
 *  `inputSchema` (index.d.ts). */
export function defineAction(def) {
  return def;
}
