// No import circles between the files of a crate: for every crate of the workspace, reads each
// `src/**/*.rs` file's module paths (`use crate::…`, `use super::…`, `use self::…`, a child
// module's name, and the same paths written inline in code), resolves each through the `pub use`
// re-exports of the module it names to the file that defines the item, and reports every
// strongly connected component of more than one file. `mod x;` declarations are not edges (a
// parent declaring its child is not an import), nor is code under `#[cfg(test)]`: tests import
// what they test, and nothing imports them.
//
// `node scripts/check-imports.mjs` prints the circles and exits 1 if there is one;
// `node scripts/check-imports.mjs host-core model` checks only the crates in those directories.
// Run by scripts/test.sh through scripts/check-imports.test.mjs.
//
// A lexical reader, not a compiler: it does not see macros' expansions, `#[path]` attributes, or
// inline `mod x { … }` blocks other than test modules. Those do not occur in this workspace's
// library code.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The workspace members' directories, from the root Cargo.toml. */
export function members() {
  const toml = readFileSync(path.join(root, "Cargo.toml"), "utf8");
  const m = /members\s*=\s*\[([^\]]*)\]/.exec(toml);
  return [...m[1].matchAll(/"([^"]+)"/g)].map((x) => x[1]);
}

/** Comments, strings and char literals blanked out (lengths kept), so braces and paths are code. */
export function stripNonCode(text) {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") (out += " "), i++;
    } else if (c === "/" && next === "*") {
      let depth = 0;
      do {
        if (text[i] === "/" && text[i + 1] === "*") (depth++, (out += "  "), (i += 2));
        else if (text[i] === "*" && text[i + 1] === "/") (depth--, (out += "  "), (i += 2));
        else (out += text[i] === "\n" ? "\n" : " "), i++;
      } while (depth > 0 && i < text.length);
    } else if (c === "r" && /^r#*"/.test(text.slice(i, i + 20)) && !/\w/.test(text[i - 1] ?? "")) {
      const hashes = /^r(#*)"/.exec(text.slice(i))[1];
      const end = text.indexOf('"' + hashes, i + 2 + hashes.length);
      const stop = end < 0 ? text.length : end + 1 + hashes.length;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1).replace(/[^\n]/g, " ");
      i = j + 1;
    } else if (c === "'" && /^'(\\.[^']*|[^\\'])'/.test(text.slice(i, i + 12))) {
      const lit = /^'(\\.[^']*|[^\\'])'/.exec(text.slice(i))[0];
      out += " ".repeat(lit.length);
      i += lit.length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The code with every `#[cfg(test)]` item (a test module or a test-only `use`) removed. */
export function withoutTests(code) {
  let out = code;
  for (;;) {
    const at = out.search(/#\[cfg\(test\)\]/);
    if (at < 0) return out;
    let i = at + "#[cfg(test)]".length;
    // The item: up to its `;` or through its `{ … }` block, whichever comes first.
    while (i < out.length && out[i] !== ";" && out[i] !== "{") i++;
    if (out[i] === "{") {
      let depth = 0;
      for (; i < out.length; i++) {
        if (out[i] === "{") depth++;
        else if (out[i] === "}" && --depth === 0) break;
      }
    }
    out = out.slice(0, at) + out.slice(i + 1);
  }
}

/** `a::{b, c::{d, e as f}}` as the flat paths `a::b`, `a::c::d`, `a::c::e as f`. */
export function expandUse(tree) {
  tree = tree.replace(/\s+/g, " ").replace(/\s*(::|,|\{|\})\s*/g, "$1").trim();
  const open = tree.indexOf("{");
  if (open < 0) return [tree];
  const prefix = tree.slice(0, open);
  const inner = tree.slice(open + 1, tree.lastIndexOf("}"));
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === "{") depth++;
    else if (inner[i] === "}") depth--;
    else if (inner[i] === "," && depth === 0) parts.push(inner.slice(start, i)), (start = i + 1);
  }
  parts.push(inner.slice(start));
  return parts.filter((p) => p !== "").flatMap((p) => expandUse(prefix + p));
}

/** The module path (`[]` for the crate root) of each `.rs` file under `src`. */
function moduleFiles(src) {
  const files = new Map();
  const walk = (dir, modPath) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full, [...modPath, entry.name]);
      else if (entry.name.endsWith(".rs")) {
        const stem = entry.name.slice(0, -3);
        const isRoot = modPath.length === 0 && (stem === "lib" || stem === "main");
        const mp = isRoot || stem === "mod" ? modPath : [...modPath, stem];
        // A binary's main.rs beside lib.rs is a crate of its own: only the library is read.
        if (modPath.length === 0 && stem === "main" && existsSync(path.join(src, "lib.rs"))) continue;
        if (modPath.length === 0 && dir !== src) continue;
        files.set(mp.join("::"), full);
      }
    }
  };
  walk(src, []);
  // `src/bin/*` are crates of their own.
  for (const key of [...files.keys()]) if (key === "bin" || key.startsWith("bin::")) files.delete(key);
  return files;
}

/** The crate's file graph: module path → set of module paths it imports, and the file names. */
export function crateGraph(dir) {
  const src = path.join(root, dir, "src");
  const files = moduleFiles(src);
  const raw = new Map();
  for (const [mod, file] of files) raw.set(mod, stripNonCode(readFileSync(file, "utf8")));
  // Modules declared under `#[cfg(test)]` (and everything below them) are tests: not read.
  const testOnly = [];
  for (const [mod, text] of raw)
    for (const m of text.matchAll(/#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g))
      testOnly.push(mod === "" ? m[1] : `${mod}::${m[1]}`);
  for (const mod of [...files.keys()])
    if (testOnly.some((t) => mod === t || mod.startsWith(t + "::"))) files.delete(mod), raw.delete(mod);
  const code = new Map();
  // `#[macro_export]` macros live at the crate root; `crate::name!` names the file defining them.
  const macros = new Map();
  for (const [mod, text] of raw) {
    code.set(mod, withoutTests(text));
    for (const m of text.matchAll(/macro_rules!\s*(\w+)/g)) macros.set(m[1], mod);
  }

  // Each module's re-exports: name → absolute path of what it names.
  const reexports = new Map();
  const useRe = /\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);/g;
  const uses = new Map();
  for (const [mod, text] of code) {
    const list = [];
    const re = new Map();
    const inner = inlineMods(text);
    for (const m of text.matchAll(useRe)) {
      for (const p of expandUse(m[2])) {
        const [pathPart, alias] = p.split(/\s+as\s+/);
        const abs = absolute(scope(mod, inner, m.index), pathPart.replace(/^::/, ""), files);
        if (!abs) continue;
        list.push(abs);
        if (m[1]) {
          const name = alias ?? abs[abs.length - 1];
          if (name !== "*" && name !== "self") re.set(name, abs);
        }
      }
    }
    uses.set(mod, list);
    reexports.set(mod, re);
  }

  /** The module whose file defines what `abs` names (following re-exports). */
  const resolve = (abs, seen = new Set()) => {
    if (abs.length === 1 && macros.has(abs[0].replace(/!$/, ""))) return macros.get(abs[0].replace(/!$/, ""));
    let n = abs.length;
    while (n > 0 && !files.has(abs.slice(0, n).join("::"))) n--;
    const mod = abs.slice(0, n).join("::");
    if (n < abs.length && !seen.has(mod + "#" + abs[n])) {
      const target = reexports.get(mod).get(abs[n]);
      if (target) {
        seen.add(mod + "#" + abs[n]);
        return resolve([...target, ...abs.slice(n + 1)], seen);
      }
    }
    return mod;
  };

  const graph = new Map();
  for (const [mod, text] of code) {
    const edges = new Set();
    const add = (abs) => {
      const target = resolve(abs);
      if (target !== mod) edges.add(target);
      if (process.env.CHECK_IMPORTS_DEBUG && target !== mod) console.error(`${mod} -> ${target}: ${abs.join("::")}`);
    };
    for (const abs of uses.get(mod)) add(abs);
    // Paths written inline: `crate::a::b`, `super::x`, `self::x`, `child::x`.
    const children = [...files.keys()]
      .filter((k) => k.startsWith(mod === "" ? "" : mod + "::") && k !== mod)
      .map((k) => k.slice(mod === "" ? 0 : mod.length + 2))
      .filter((k) => !k.includes("::"));
    const heads = ["crate", "super", "self", ...children].join("|");
    const inline = new RegExp(`(?<![\\w:])((?:${heads})(?:::\\w+)+!?)`, "g");
    const inner = inlineMods(text);
    const noUse = text.replace(useRe, (u) => " ".repeat(u.length));
    for (const m of noUse.matchAll(inline)) {
      const abs = absolute(scope(mod, inner, m.index), m[1], files);
      if (abs) add(abs);
    }
    graph.set(mod, edges);
  }
  return { graph, files };
}

/** The `[start, end)` ranges of the inline `mod x { … }` blocks of a file's code. */
function inlineMods(code) {
  const out = [];
  for (const m of code.matchAll(/\bmod\s+\w+\s*\{/g)) {
    let depth = 0;
    let i = m.index + m[0].length - 1;
    for (; i < code.length; i++) {
      if (code[i] === "{") depth++;
      else if (code[i] === "}" && --depth === 0) break;
    }
    out.push([m.index, i]);
  }
  return out;
}

/** The module a path at `pos` is written in: the file's, one level down per inline `mod`. */
function scope(mod, inner, pos) {
  const depth = inner.filter(([a, b]) => a <= pos && pos < b).length;
  const base = mod === "" ? [] : mod.split("::");
  return [...base, ...Array(depth).fill("{inline}")].join("::");
}

/** A use path from module `mod` as an absolute segment list, or null when it is another crate's. */
function absolute(mod, p, files) {
  const segs = p.split("::").filter((s) => s !== "");
  let base = mod === "" ? [] : mod.split("::");
  if (segs[0] === "crate") return [...segs.slice(1)];
  if (segs[0] === "self") return [...base, ...segs.slice(1)];
  if (segs[0] === "super") {
    while (segs[0] === "super") (base = base.slice(0, -1)), segs.shift();
    return [...base, ...segs];
  }
  // A child module's name (2018 paths), else an extern crate or a prelude name.
  if (files.has([...base, segs[0]].join("::"))) return [...base, ...segs];
  return null;
}

/** Tarjan's strongly connected components with more than one member. */
export function circles(graph) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) visit(w), low.set(v, Math.min(low.get(v), low.get(w)));
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do (w = stack.pop()), on.delete(w), comp.push(w);
      while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** Every circle of the given crates (directories), with the edges that make it. */
export function check(dirs = members()) {
  const problems = [];
  for (const dir of dirs) {
    const { graph, files } = crateGraph(dir);
    for (const comp of circles(graph)) {
      const set = new Set(comp);
      const rel = (m) => path.relative(root, files.get(m));
      const edges = comp.flatMap((m) => [...graph.get(m)].filter((t) => set.has(t)).map((t) => `${rel(m)} -> ${rel(t)}`));
      problems.push(`${dir}: ${comp.length} files import each other:\n    ${edges.join("\n    ")}`);
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dirs = process.argv.slice(2);
  const problems = check(dirs.length ? dirs : undefined);
  for (const p of problems) console.log(p);
  process.exit(problems.length ? 1 : 0);
}
