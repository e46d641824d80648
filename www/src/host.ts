// Loads @dpas/host. A wasm-bindgen build for the web exports an init function as its
// default export; a bundler build initialises on import. Both are handled here, once.
import * as host from "@dpas/host";

let ready: Promise<typeof host> | null = null;

export function loadHost(): Promise<typeof host> {
  ready ??= (async () => {
    const init = (host as unknown as { default?: unknown }).default;
    if (typeof init === "function") await (init as () => Promise<unknown>)();
    return host;
  })();
  return ready;
}
