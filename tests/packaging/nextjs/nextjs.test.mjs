// The package README's Next.js row, checked on Next.js 16 (app router, its default bundler):
// `next build` prerenders the page with the provider's fallback (no wasm on the server), and
// `next start` serves a page that initialises the wasm and registers in Debian's headless
// Chromium. Telemetry is off: nothing here talks to any address but 127.0.0.1.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL(".", import.meta.url));
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };

function next(...args) {
  return spawn(process.execPath, ["node_modules/next/dist/bin/next", ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
}

async function startNext() {
  const child = next("start", "-H", "127.0.0.1", "-p", "0");
  let output = "";
  child.stderr.on("data", (chunk) => (output += chunk));
  const url = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`next start exited (${code}):\n${output}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      output += `${line}\n`;
      const found = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line);
      if (found) resolve(found[1]);
    });
  });
  return { url, stop: () => child.kill() };
}

test("a client component under <SurfaceProvider>: built, prerendered with its fallback, ready in Chromium", async () => {
  const build = next("build");
  let log = "";
  build.stdout.on("data", (chunk) => (log += chunk));
  build.stderr.on("data", (chunk) => (log += chunk));
  const [code] = await once(build, "exit");
  assert.equal(code, 0, log);

  const server = await startNext();
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const html = await (await fetch(server.url)).text();
    assert.match(html, /<p id="status">loading<\/p>/, "the prerendered page holds the provider's fallback");
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(server.url);
    const status = page.locator("#status");
    await status.filter({ hasText: "ready" }).waitFor();
    assert.equal(await status.textContent(), "ready: surface version 1");
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.stop();
  }
});
