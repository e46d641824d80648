// node --test scripts/check-docs.test.mjs: the link checker's rules, then the repository.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { readFileSync } from "node:fs";
import {
  anchors, checkEnvVars, checkFile, checkRepository, codeBlocks, envVarsRead, links, serverSources, slug,
} from "./check-docs.mjs";

test("anchors follow GitHub's slugs, repeats numbered", () => {
  assert.equal(slug("The server's model loop"), "the-servers-model-loop");
  assert.equal(slug("`/rpc` and the API"), "rpc-and-the-api");
  assert.deepEqual(
    [...anchors("# Title\n## Frames\n```\n# not a heading\n```\n## Frames\n")],
    ["title", "frames", "frames-1"],
  );
});

test("links in code are not links", () => {
  const text = "See [a](a.md) and `[b](b.md)`.\n```\n[c](c.md)\n```\n[d](d.md#x \"title\")";
  assert.deepEqual(links(text), ["a.md", "d.md#x"]);
});

test("a link outside the repository, to nothing, or to a missing heading is reported", () => {
  const files = { "docs/a.md": "# A\n## Here\n", "README.md": "" };
  const read = (rel) => files[rel] ?? null;
  const text = [
    "[ok](docs/a.md#here)",
    "[self](#top)",
    "[elsewhere](../elsewhere/DESIGN.md)",
    "[gone](docs/b.md)",
    "[anchor](docs/a.md#there)",
    "[web](https://example.org/x)",
  ].join("\n");
  assert.deepEqual(checkFile(".", "README.md", "# Top\n" + text, read), [
    "README.md: ../elsewhere/DESIGN.md points outside the repository",
    "README.md: docs/b.md does not exist",
    "README.md: docs/a.md#there names no heading of docs/a.md",
  ]);
  assert.deepEqual(checkFile(".", "docs/a.md", "[up](../README.md) [deep](../../x.md)", read), [
    "docs/a.md: ../../x.md points outside the repository",
  ]);
  // Paths written as code: into a folder outside, reported; the folder's own name, or a path
  // that stays inside (a build output need not exist), not.
  const spans = "See `../../elsewhere/spec/host-protocol.md`, `../../elsewhere` and `../host-wasm/pkg`.";
  assert.deepEqual(checkFile(".", "www/README.md", spans, read), [
    "www/README.md: `../../elsewhere/spec/host-protocol.md` names a path outside the repository",
  ]);
  assert.deepEqual(checkFile(".", "README.md", "`../elsewhere/DESIGN.md`", read), [
    "README.md: `../elsewhere/DESIGN.md` names a path outside the repository",
  ]);
});

test("every Markdown link in the repository resolves inside it, and the reference names every variable", () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const { files, problems } = checkRepository(root);
  assert.ok(files.includes("README.md") && files.includes("docs/protocol.md"), files.join(", "));
  assert.deepEqual(problems, []);
});

test("code blocks are read by language and dedented by their fence", () => {
  const text = "1. Run:\n\n   ```tsx\n   const a = 1;\n\n     nested();\n   ```\n```sh\nls\n```\n";
  assert.deepEqual(codeBlocks(text, "tsx"), ["const a = 1;\n\n  nested();\n"]);
  assert.deepEqual(codeBlocks(text, "sh"), ["ls\n"]);
});

test("the README's quick start is the component the packaging fixture type-checks", () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const [snippet, ...others] = codeBlocks(readFileSync(path.join(root, "README.md"), "utf8"), "tsx");
  assert.equal(others.length, 0, "one tsx block in README.md");
  const fixture = readFileSync(path.join(root, "tests/packaging/vite-react/src/quickstart/App.tsx"), "utf8");
  // The fixture's own header comment is not part of the snippet.
  assert.equal(snippet, fixture.replace(/^(\/\/.*\n)+/, ""));
});

test("the variables a Rust source reads: clap's env, var calls, and named constants where the environment is read", () => {
  const clap = '#[arg(long, env = "DPAS_LISTEN", default_value = "127.0.0.1:8080")]\nlet code = "RATE_LIMITED";';
  assert.deepEqual([...envVarsRead(clap)], ["DPAS_LISTEN"]);
  const lookup = [
    'const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";',
    'let logs = std::env::var("RUST_LOG").ok();',
    'let key = var("OPENAI_API_KEY");',
    "#[cfg(test)]",
    'mod tests { const IGNORED: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"; }',
  ].join("\n");
  assert.deepEqual([...envVarsRead(lookup)].sort(), ["OPENAI_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "RUST_LOG"]);
});

test("a variable the server reads and the reference does not name is reported", () => {
  const sources = [{ file: "host-server/src/config.rs", text: 'env = "DPAS_LISTEN"\nenv = "DPAS_NEW_FLAG"' }];
  const reference = "| `--listen ADDR` | `DPAS_LISTEN` | `127.0.0.1:8080` |\n`DPAS_NEW_FLAG_X` is another variable";
  assert.deepEqual(checkEnvVars(sources, reference), [
    "host-server/REFERENCE.md does not name DPAS_NEW_FLAG, which host-server/src/config.rs reads",
  ]);
  assert.deepEqual(checkEnvVars(sources, reference + "\n| `DPAS_NEW_FLAG` | on |"), []);
});

test("the server's sources are found, and every variable they read is in host-server/REFERENCE.md", () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const read = new Set(serverSources(root).flatMap(({ text }) => [...envVarsRead(text)]));
  for (const name of ["DPAS_JWT_SECRET", "DPAS_SESSION_SECRET", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OTEL_SDK_DISABLED", "RUST_LOG"]) {
    assert.ok(read.has(name), `${name} among ${[...read].join(", ")}`);
  }
  const reference = readFileSync(path.join(root, "host-server/REFERENCE.md"), "utf8");
  assert.deepEqual(checkEnvVars(serverSources(root), reference), []);
});
