// The repository's Markdown stands on its own: every relative link resolves to a file in the
// repository (never outside it, e.g. into a folder beside the checkout, which a clone lacks),
// and every `#anchor` names a heading of its target; every environment variable the server
// reads is in host-server/REFERENCE.md's tables. Run by scripts/test.sh through
// scripts/check-docs.test.mjs; `node scripts/check-docs.mjs` prints the problems directly.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The text outside fenced code blocks, line by line (links in code are not links). */
function proseLines(text) {
  const out = [];
  let fenced = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) out.push(line);
  }
  return out;
}

/** The anchors a Markdown text defines, with GitHub's `-1`, `-2` suffixes for repeats. */
export function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const line of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Inline link targets `[text](target)` outside code blocks and code spans. */
export function links(text) {
  const out = [];
  for (const line of proseLines(text)) {
    const withoutCode = line.replace(/`[^`]*`/g, (span) => (span.includes("](") ? "" : span));
    for (const m of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      out.push(m[1]);
    }
  }
  return out;
}

/** Code spans that read as relative paths (`../elsewhere/DESIGN.md`), outside code blocks. */
export function pathSpans(text) {
  const out = [];
  for (const line of proseLines(text)) {
    for (const m of line.matchAll(/`(\.\.\/[^`\s]+)`/g)) out.push(m[1]);
  }
  return out;
}

/** The fenced code blocks of a Markdown text tagged `lang`, each dedented by its fence's indent. */
export function codeBlocks(text, lang) {
  const out = [];
  let open = null;
  for (const line of text.split("\n")) {
    const fence = /^(\s*)(```|~~~)\s*(\S*)/.exec(line);
    if (fence && open === null) {
      open = { indent: fence[1].length, lang: fence[3], lines: [] };
    } else if (fence && open !== null) {
      if (open.lang === lang) out.push(open.lines.join("\n") + "\n");
      open = null;
    } else if (open !== null) {
      open.lines.push(line.slice(Math.min(open.indent, line.length - line.trimStart().length)));
    }
  }
  return out;
}

/** Where a relative path from `file` lands, or null when it leaves the repository. */
function inside(file, rawPath) {
  const rel = rawPath === "" ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), rawPath));
  return rel === ".." || rel.startsWith("../") || path.posix.isAbsolute(rel) ? null : rel;
}

/**
 * Problems with the links of one Markdown file: `file` is relative to `root`, `read(rel)`
 * gives another file's text (or null when it does not exist).
 */
export function checkFile(root, file, text, read) {
  const problems = [];
  for (const target of links(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
    const [rawPath, anchor] = target.split("#", 2);
    const rel = inside(file, rawPath);
    if (rel === null) {
      problems.push(`${file}: ${target} points outside the repository`);
      continue;
    }
    const targetText = rawPath === "" ? text : read(rel.replace(/\/$/, ""));
    if (targetText === null) {
      problems.push(`${file}: ${target} does not exist`);
      continue;
    }
    if (anchor && rel.endsWith(".md") && !anchors(targetText).has(anchor)) {
      problems.push(`${file}: ${target} names no heading of ${rel}`);
    }
  }
  // A path into a folder beside the checkout (`../elsewhere/spec/…`) sends a reader where a
  // clone has nothing; naming the folder itself, to say it is optional, is fine.
  for (const span of pathSpans(text)) {
    const outside = path.posix.normalize(path.posix.join(path.posix.dirname(file), span));
    if (inside(file, span) === null && /^(\.\.\/)+[^/]+\/./.test(outside)) {
      problems.push(`${file}: \`${span}\` names a path outside the repository`);
    }
  }
  return problems;
}

/** The crates whose code the `host-server` binary runs, where it reads its environment. */
export const SERVER_SOURCES = ["cli", "host-server", "engine", "governance", "store", "model", "demo"];

/**
 * The environment variables a Rust source reads: clap's `env = "NAME"`, `var("NAME")` and
 * `var_os("NAME")` calls (`std::env::var`, or a lookup closure named `var`), and, in a file that
 * calls `env::var`, every string literal spelled like a variable (`"OTEL_SDK_DISABLED"`: names
 * kept in constants and passed to a lookup). A `#[cfg(test)]` module and what follows it are
 * tests, not the server.
 */
export function envVarsRead(rust) {
  const code = rust.split(/^\s*#\[cfg\(test\)\]/m)[0];
  const names = new Set();
  for (const m of code.matchAll(/\benv\s*=\s*"([A-Z][A-Z0-9_]*)"/g)) names.add(m[1]);
  for (const m of code.matchAll(/\bvar(?:_os)?\(\s*"([A-Z][A-Z0-9_]*)"\s*\)/g)) names.add(m[1]);
  if (/\benv::var/.test(code)) {
    for (const m of code.matchAll(/"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g)) names.add(m[1]);
  }
  return names;
}

/**
 * Problems with the reference's tables: each variable one of `sources` (`{file, text}`) reads
 * that `reference` (host-server/REFERENCE.md's text) never names.
 */
export function checkEnvVars(sources, reference) {
  const problems = [];
  for (const { file, text } of sources) {
    for (const name of envVarsRead(text)) {
      if (!new RegExp(`(^|[^A-Z0-9_])${name}($|[^A-Z0-9_])`).test(reference)) {
        problems.push(`host-server/REFERENCE.md does not name ${name}, which ${file} reads`);
      }
    }
  }
  return problems;
}

/** The server's Rust sources in the repository at `root`, as `checkEnvVars` takes them. */
export function serverSources(root) {
  return execFileSync("git", ["ls-files", ...SERVER_SOURCES.map((c) => `${c}/src/*.rs`)], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .map((file) => ({ file, text: readFileSync(path.join(root, file), "utf8") }));
}

/** Every tracked Markdown file of the repository at `root`, checked. */
export function checkRepository(root) {
  const files = execFileSync("git", ["ls-files", "*.md"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  const read = (rel) => {
    const abs = path.join(root, rel);
    if (!existsSync(abs)) return null;
    try {
      return readFileSync(abs, "utf8");
    } catch {
      return ""; // a folder: it exists, and has no headings
    }
  };
  const problems = files.flatMap((f) => checkFile(root, f, read(f), read));
  problems.push(...checkEnvVars(serverSources(root), read("host-server/REFERENCE.md") ?? ""));
  return { files, problems };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const { files, problems } = checkRepository(root);
  for (const p of problems) console.error(p);
  console.log(`${files.length} Markdown files, ${problems.length} problems`);
  process.exit(problems.length === 0 ? 0 : 1);
}
