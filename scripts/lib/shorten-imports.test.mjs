// node --test scripts/lib/shorten-imports.test.mjs: the import-name shortening of
// scripts/build-wasm.sh on a hand-assembled module and a glue shaped like wasm-bindgen's. The
// package itself is covered by every suite that loads it (e2e, packaging, the browser bench).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const script = join(dirname(fileURLToPath(import.meta.url)), "shorten-imports.mjs");
const str = (text) => [text.length, ...Buffer.from(text)];
const section = (id, body) => [id, body.length, ...body];

// (import "./x_bg.js" <add> (func (param i32 i32) (result i32)))
// (import "./x_bg.js" <seven> (func (result i32)))
// (func (export "run") (result i32) (call <add> (i32.const 5) (call <seven>)))
function module(add, seven, secondModule = "./x_bg.js") {
  return Buffer.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [2, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 1, 0x7f]),
    ...section(2, [2, ...str("./x_bg.js"), ...str(add), 0x00, 0, ...str(secondModule), ...str(seven), 0x00, 1]),
    ...section(3, [1, 1]),
    ...section(7, [1, ...str("run"), 0x00, 2]),
    ...section(10, [1, 8, 0, 0x41, 5, 0x10, 1, 0x10, 0, 0x0b]),
  ]);
}

const glue = (add, seven) => `function getImports() {
    const import0 = {
        __proto__: null,
        ${add}: function(a, b) { return a + b; },
        ${seven}: function() { return 7; },
    };
    return { __proto__: null, "./x_bg.js": import0 };
}
export { getImports };
`;

const ADD = "__wbg_add_0123456789abcdef";
const SEVEN = "__wbg_seven_fedcba9876543210";

function files(wasm, js) {
  const dir = mkdtempSync(join(tmpdir(), "shorten-imports-"));
  const wasmPath = join(dir, "m.wasm");
  const gluePath = join(dir, "glue.mjs");
  writeFileSync(wasmPath, wasm);
  writeFileSync(gluePath, js);
  return { wasmPath, gluePath };
}

test("the module and its glue get short names and still link and run", async () => {
  const { wasmPath, gluePath } = files(module(ADD, SEVEN), glue(ADD, SEVEN));
  const before = readFileSync(wasmPath).length;
  execFileSync(process.execPath, [script, wasmPath, gluePath]);

  const wasm = readFileSync(wasmPath);
  const js = readFileSync(gluePath, "utf8");
  assert.deepEqual(
    WebAssembly.Module.imports(new WebAssembly.Module(wasm)).map((i) => `${i.module}.${i.name}`),
    ["a.a", "a.b"],
  );
  assert.ok(wasm.length < before);
  assert.ok(!js.includes(ADD) && !js.includes(SEVEN) && !js.includes("./x_bg.js"));

  const { getImports } = await import(pathToFileURL(gluePath).href);
  const { instance } = await WebAssembly.instantiate(wasm, getImports());
  assert.equal(instance.exports.run(), 12);
});

function refuses(wasm, js, reason) {
  const { wasmPath, gluePath } = files(wasm, js);
  const run = spawnSync(process.execPath, [script, wasmPath, gluePath], { encoding: "utf8" });
  assert.equal(run.status, 1);
  assert.match(run.stderr, reason);
  assert.deepEqual(readFileSync(wasmPath), wasm, "the module is left as it was");
  assert.equal(readFileSync(gluePath, "utf8"), js, "the glue is left as it was");
}

test("an import the glue does not provide refuses, leaving both files untouched", () => {
  refuses(module(ADD, SEVEN), glue(ADD, "__wbg_other_fedcba9876543210"), /does not provide __wbg_seven/);
});

test("a second import module refuses", () => {
  refuses(module(ADD, SEVEN, "./y_bg.js"), glue(ADD, SEVEN), /one import module/);
});

test("a file that is not a wasm module refuses", () => {
  refuses(Buffer.from("not wasm at all"), glue(ADD, SEVEN), /not a wasm module/);
});
