// Shortens the names the package's wasm imports its JS functions by, in the .wasm and in the
// glue that provides them (scripts/build-wasm.sh runs it after wasm-opt):
//   node scripts/lib/shorten-imports.mjs <dpas_host_bg.wasm> <dpas_host.js>
//
// wasm-bindgen names each import after the function and a 16-digit hash
// (`__wbg_instanceof_AbortSignal_16e867a9888f3bc7`) under the module "./dpas_host_bg.js": 83
// imports, 2.5 KB of names and 1.4 KB of module names in the .wasm and the names again as the
// keys of the glue's import object. The hashes do not compress. Here the module becomes "a" and
// each import a one- or two-letter name, in the import section and in the glue. binaryen's
// `--minify-imports` renames only the imports of emscripten's modules ("env", "wasi_…"), and
// `--minify-imports-and-exports-and-modules` renames the exports too, which `init()` hands to
// the app as its typed `InitOutput`; the exports keep their names here.
//
// Refuses (exit 1, files untouched) anything it does not expect: a second import module, an
// import that is not a function, a name that is not in the glue exactly once.
import { readFileSync, writeFileSync } from "node:fs";

const [wasmPath, gluePath] = process.argv.slice(2);
if (!wasmPath || !gluePath) {
  console.error("usage: shorten-imports.mjs <module.wasm> <glue.js>");
  process.exit(2);
}
const fail = (message) => {
  console.error(`shorten-imports: ${message}`);
  process.exit(1);
};

const bytes = readFileSync(wasmPath);
let glue = readFileSync(gluePath, "utf8");

// LEB128 (unsigned) reading and writing.
function readU32(at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if ((byte & 0x80) === 0) return [value, at];
  }
}
function u32(value) {
  const out = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return Buffer.from(out);
}
const name = (text) => Buffer.concat([u32(Buffer.byteLength(text)), Buffer.from(text)]);

if (bytes.readUInt32LE(0) !== 0x6d736100 || bytes.readUInt32LE(4) !== 1) fail("not a wasm module");
let at = 8;
let section = null;
while (at < bytes.length) {
  const id = bytes[at];
  const [size, body] = readU32(at + 1);
  if (id === 2) {
    section = { start: at, body, end: body + size };
    break;
  }
  at = body + size;
}
if (section === null) fail("the module has no import section");

// Each import: module, name, and a function's type index (the only kind wasm-bindgen emits here).
const imports = [];
let [count, pos] = readU32(section.body);
for (let i = 0; i < count; i++) {
  const [moduleLength, moduleAt] = readU32(pos);
  const module = bytes.toString("utf8", moduleAt, moduleAt + moduleLength);
  const [nameLength, nameAt] = readU32(moduleAt + moduleLength);
  const field = bytes.toString("utf8", nameAt, nameAt + nameLength);
  pos = nameAt + nameLength;
  if (bytes[pos] !== 0x00) fail(`import ${module}.${field} is not a function`);
  const [, next] = readU32(pos + 1);
  imports.push({ module, field, desc: bytes.subarray(pos, next) });
  pos = next;
}
if (pos !== section.end) fail("the import section has bytes after its entries");
const modules = new Set(imports.map((entry) => entry.module));
if (modules.size !== 1) fail(`expected one import module, found ${[...modules].join(", ")}`);
const [module] = modules;

// Short names: a…z, A…Z, then two letters. As object keys any of them is valid JS.
const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const short = (i) =>
  i < letters.length
    ? letters[i]
    : letters[Math.floor(i / letters.length) - 1] + letters[i % letters.length];

// The glue: the module's key once, each import's key once (`name: function(…)`).
const once = (text, needle) => text.split(needle).length - 1 === 1;
const moduleKey = `${JSON.stringify(module)}: import0`;
if (!once(glue, moduleKey)) fail(`the glue does not name ${moduleKey} exactly once`);
glue = glue.replace(moduleKey, `"a": import0`);
imports.forEach((entry, i) => {
  const key = `${entry.field}: function`;
  if (!once(glue, key)) fail(`the glue does not provide ${entry.field} exactly once`);
  glue = glue.replace(key, `${short(i)}: function`);
});

const entries = imports.map((entry, i) => Buffer.concat([name("a"), name(short(i)), entry.desc]));
const body = Buffer.concat([u32(imports.length), ...entries]);
const out = Buffer.concat([
  bytes.subarray(0, section.start),
  Buffer.from([2]),
  u32(body.length),
  body,
  bytes.subarray(section.end),
]);
// The result must still be a module whose imports are the new names, in the same order.
const check = WebAssembly.Module.imports(new WebAssembly.Module(out));
if (check.length !== imports.length || check.some((entry, i) => entry.name !== short(i) || entry.module !== "a")) {
  fail("the rewritten module does not read back as written");
}
writeFileSync(wasmPath, out);
writeFileSync(gluePath, glue);
console.log(
  `  shortened ${imports.length} import names: wasm ${bytes.length} -> ${out.length} bytes`,
);
