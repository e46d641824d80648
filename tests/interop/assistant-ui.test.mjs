// assistant-ui's AG-UI adapter (@assistant-ui/react-ag-ui, unmodified, with its own primitives)
// in Debian's headless Chromium (playwright-core) against /agent/ag-ui: the user types into
// the composer, the adapter runs the agent, and the thread renders a server-tool turn with
// text after it.
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
    { when: { lastUserContains: "summary", lacksResult: "domain_receivables-summary" },
      text: ["Reading the summary."], toolCalls: [{ name: "domain_receivables-summary" }] },
    { text: ["Here it is:", " all in order."] },
  ],
};

let site;
let server;
let browser;
before(async () => {
  site = mkdtempSync(join(tmpdir(), "dpas-assistant-ui-"));
  await build({
    entryPoints: [join(HERE, "browser/assistant-ui.jsx")],
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

test("assistant-ui's AG-UI adapter renders a server-tool turn with text after it", async () => {
  const context = await browser.newContext({ baseURL: server.url });
  try {
    await context.request.post("/api/session", { data: { role: "controller" }, failOnStatusCode: true });
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const runs = [];
    page.on("response", (r) => r.url().endsWith("/agent/ag-ui") && runs.push(r.status()));
    await page.goto("/");
    await page.getByLabel("Message").fill("Give me the summary");
    await page.getByRole("button", { name: "Send" }).click();
await page.locator('[data-role="assistant"] [data-part="text"]', { hasText: "all in order" }).waitFor({ timeout: 20_000 });
    await page.locator('output[data-idle="true"]').waitFor();
    assert.deepEqual(
      await page.locator('[data-role="user"] [data-part]').allTextContents(),
      ["Give me the summary"],
    );
    const parts = await page.locator('[data-role="assistant"] [data-part]').evaluateAll((els) =>
      els.map((e) => [e.dataset.part, e.dataset.tool ?? e.textContent, e.dataset.state ?? ""]),
    );
    assert.deepEqual(parts, [
      ["text", "Reading the summary.", ""],
      ["tool", "domain_receivables-summary", "done"],
      ["text", "Here it is: all in order.", ""],
    ]);
    assert.deepEqual(runs, [200]);
    assert.equal(await page.getByRole("alert").count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
