// node --test scripts/check-standalone.test.mjs: the rules of scripts/check-standalone.mjs.
// (scripts/test.sh runs the check on the repository itself as its own step.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { problemsIn } from "./check-standalone.mjs";

// Spelled in pieces, as in the checker, so that this file passes the check it tests.
const ref = "sha" + "red";
const machine = "/wor" + "k/";
const sharedVar = "DPAS_" + "SHARED_DIR";
const conformanceVar = "DPAS_" + "CONFORMANCE_DIR";

test("each way of naming a path outside the repository is reported with its file and line", () => {
  const text = [
    "fine line",
    `const dir = path.join(root, "../${ref}");`,
    `//! see ${ref}/demo/README.md §a`,
    `std::env::var("${sharedVar}")`,
    `set ${conformanceVar}=x`,
    `read ${machine}${ref}/conformance`,
  ].join("\n");
  assert.deepEqual(problemsIn("a.rs", text), [
    `a.rs:2: ../${ref} names the reference folder beside the checkout`,
    `a.rs:3: ${ref}/demo names the reference folder beside the checkout`,
    `a.rs:4: ${sharedVar} names a variable that pointed outside the checkout`,
    `a.rs:5: ${conformanceVar} names a variable that pointed outside the checkout`,
    `a.rs:6: ${machine} names an absolute path on one machine`,
  ]);
});

test("the word, ids and paths inside the repository are not reported", () => {
  const text = [
    `"cnv_${ref}" and wasm-bindgen-${ref} and host-core/src/${ref}.rs`,
    `mod ${ref}; a ${ref} database; fixtures/demo/README.md`,
    `https://example.org${machine}x and ./${ref}/demo (a folder of the repository)`,
  ].join("\n");
  assert.deepEqual(problemsIn("b.md", text), []);
});
