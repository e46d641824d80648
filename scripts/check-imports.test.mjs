// `node --test scripts/check-imports.test.mjs`: the reader of scripts/check-imports.mjs on small
// inputs, and the workspace's import circles against the ones known today.
import assert from "node:assert/strict";
import { test } from "node:test";
import { circles, crateGraph, expandUse, members, stripNonCode, withoutTests } from "./check-imports.mjs";

// No crate of the workspace has a circle: a file never imports a file that (through others)
// imports it. A parent module that only declares and re-exports its children is no circle; one
// that defines what a child imports is.

test("use trees expand to flat paths", () => {
  assert.deepEqual(expandUse("crate::{a::B, c::{D,\n  base as F}}"), ["crate::a::B", "crate::c::D", "crate::c::base as F"]);
  assert.deepEqual(expandUse("super::x"), ["super::x"]);
});

test("comments, strings and test items are not code", () => {
  const code = stripNonCode('// crate::a\nlet s = "crate::b"; /* crate::c */ let c = \'{\';\n');
  assert.doesNotMatch(code, /crate::/);
  assert.doesNotMatch(code, /\{/);
  const kept = withoutTests("use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n");
  assert.match(kept, /crate::a/);
  assert.doesNotMatch(kept, /crate::b/);
});

test("Tarjan finds the circles and only those", () => {
  const graph = new Map([
    ["a", new Set(["b"])],
    ["b", new Set(["a", "c"])],
    ["c", new Set([])],
  ]);
  assert.deepEqual(circles(graph), [["a", "b"]]);
});

test("no crate of the workspace has an import circle", () => {
  const problems = [];
  for (const dir of members()) {
    const { graph } = crateGraph(dir);
    for (const comp of circles(graph)) problems.push(`${dir}: ${comp.join(", ")}`);
  }
  assert.deepEqual(problems, [], "import circles (node scripts/check-imports.mjs shows their edges)");
});
