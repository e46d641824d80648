// The package README's Vite <= 6 row, checked on Vite 6: the dev server works with the recipe
// (vite.config.js) and does not without it, and a production build needs no configuration.
// Each page is loaded in Debian's headless Chromium and must initialise the wasm and register.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { build, createServer, preview } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));
const listen = { host: "127.0.0.1", port: 0 };

/** What the page's status line says once it has left "loading". */
async function statusOf(url) {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    await page.goto(url);
    const status = page.locator("#status");
    await status.filter({ hasNotText: "loading" }).waitFor();
    return await status.textContent();
  } finally {
    await browser.close();
  }
}

async function devServerStatus(configFile) {
  const server = await createServer({ root, configFile, server: listen, logLevel: "error", cacheDir: `node_modules/.vite-${configFile ? "recipe" : "bare"}` });
  await server.listen();
  try {
    return await statusOf(server.resolvedUrls.local[0]);
  } finally {
    await server.close();
  }
}

test("Vite 6 dev server with the README's recipe: the wasm loads", async () => {
  assert.equal(await devServerStatus(`${root}vite.config.js`), "ready: surface version 1");
});

test("Vite 6 dev server without it: init() is handed index.html (why the recipe is there)", async () => {
  assert.match(await devServerStatus(false), /^failed: CompileError: .*expected magic word/);
});

test("Vite 6 production build, no configuration: the wasm is an asset and loads", async () => {
  await build({ root, configFile: false, logLevel: "error" });
  const server = await preview({ root, configFile: false, preview: listen, logLevel: "error" });
  try {
    assert.equal(await statusOf(server.resolvedUrls.local[0]), "ready: surface version 1");
  } finally {
    await server.close();
  }
});
