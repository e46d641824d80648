// The package's Node entry (vitest + jsdom, SSR): the browser entry, with an `init()` that
// reads the wasm file from disk, because Node's fetch cannot load a file: URL.
import { readFile } from "node:fs/promises";
import init from "./index.js";

export * from "./index.js";

const WASM = new URL("./dpas_host_bg.wasm", import.meta.url);

export default async function initNode(input) {
  return init(input ?? { module_or_path: await readFile(WASM) });
}
