// The repository stands alone: no tracked file names a path outside the checkout for a
// build, test, benchmark or script to read (the reference material beside a checkout, the
// variables that used to point at it, or an absolute path on one machine). What the tests
// read lives in fixtures/. Run by scripts/test.sh (`node scripts/check-standalone.mjs`
// prints each finding as file:line); its rules are tested by scripts/check-standalone.test.mjs.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// The names are spelled in pieces so that this file, and its test, pass their own check.
const ref = "sha" + "red";
const envPrefix = "DPAS" + "_";

/** What a tracked file may not name, each with what it is. */
export const RULES = [
  { what: "the reference folder beside the checkout", re: new RegExp(String.raw`\.\./${ref}\b`) },
  {
    what: "the reference folder beside the checkout",
    re: new RegExp(String.raw`(?<![\w./-])${ref}/(conformance|demo|provider-fixtures|spec|reviews|measurements|hooks|DESIGN\.md)\b`),
  },
  { what: "a variable that pointed outside the checkout", re: new RegExp(`\\b${envPrefix}(${ref.toUpperCase()}|CONFORMANCE)_DIR\\b`) },
  { what: "an absolute path on one machine", re: new RegExp(String.raw`(?<![\w./-])/wor` + "k/") },
];

/**
 * Tracked files not checked, each with the reason. Keep this list short and say when an
 * entry can go.
 */
export const EXEMPT = new Map([]);

/** The findings in one file's text: `file:line: text (what)`. */
export function problemsIn(file, text) {
  const problems = [];
  text.split("\n").forEach((line, i) => {
    for (const { what, re } of RULES) {
      const m = re.exec(line);
      if (m) problems.push(`${file}:${i + 1}: ${m[0]} names ${what}`);
    }
  });
  return problems;
}

/** Every tracked text file of the repository at `root`, checked (binary files are skipped). */
export function checkRepository(root) {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((f) => f && !EXEMPT.has(f));
  const problems = [];
  let checked = 0;
  for (const file of files) {
    let bytes;
    try {
      bytes = readFileSync(path.join(root, file));
    } catch {
      continue; // deleted in the work tree, not yet in the index
    }
    if (bytes.includes(0)) continue; // binary, as git decides it
    checked += 1;
    problems.push(...problemsIn(file, bytes.toString("utf8")));
  }
  return { checked, problems };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const { checked, problems } = checkRepository(root);
  for (const p of problems) console.error(p);
  console.log(`${checked} tracked text files, ${problems.length} naming a path outside the repository`);
  process.exit(problems.length === 0 ? 0 : 1);
}
