// @ai-sdk/react's useChat in Debian's headless Chromium (playwright-core) against
// /agent/ai-sdk: a server-tool turn with text after it, rendered from the hook's messages.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { startScripted } from "./server.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const SCRIPT = {
  turns: [
    { when: { lastUserContains: "ageing", lacksResult: "domain_collections-aging" },
      text: ["Checking the ladder."], toolCalls: [{ name: "domain_collections-aging" }] },
    { text: ["Most of it", " is not yet due."] },
  ],
};

let site;
let server;
let browser;
before(async () => {
  site = mkdtempSync(join(tmpdir(), "dpas-use-chat-"));
  await build({
    entryPoints: [join(HERE, "browser/use-chat.jsx")],
    bundle: true,
    format: "esm",
    jsx: "automatic",
    outfile: join(site, "app.js"),
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "error",
  });
  writeFileSync(join(site, "index.html"), '<!doctype html><div id="root"></div><script type="module" src="/app.js"></script>');
  server = await startScripted(SCRIPT, ["--static", site]);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
});
after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(site, { recursive: true, force: true });
});

test("useChat renders a server-tool turn with text after it", async () => {
  const context = await browser.newContext({ baseURL: server.url });
  try {
    await context.request.post("/api/session", { data: { role: "controller" }, failOnStatusCode: true });
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto("/");
    await page.getByRole("button", { name: "Ask" }).click();
    await page.locator('output[data-status="ready"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-role="assistant"]').waitFor();
    const parts = await page.locator('[data-role="assistant"] [data-part]').evaluateAll((els) =>
      els.map((e) => [e.dataset.part, e.dataset.tool ?? e.textContent, e.dataset.state ?? ""]),
    );
    assert.deepEqual(parts, [
      ["text", "Checking the ladder.", ""],
      ["tool", "domain_collections-aging", "output-available"],
      ["text", "Most of it is not yet due.", ""],
    ]);
    assert.equal(await page.getByRole("alert").count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
