// assistant-ui's AG-UI adapter (@assistant-ui/react-ag-ui, unmodified, with its own primitives)
// in Debian's headless Chromium (playwright-core) against /agent/ag-ui: the user types into
// the composer, the adapter runs the agent, and the thread renders a server-tool turn with
// text after it.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { servedPage } from "./server.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const SCRIPT = {
  turns: [
    { when: { lastUserContains: "summary", lacksResult: "domain_receivables-summary" },
      text: ["Reading the summary."], toolCalls: [{ name: "domain_receivables-summary" }] },
    { text: ["Here it is:", " all in order."] },
  ],
};

const served = servedPage(join(HERE, "browser/assistant-ui.jsx"), SCRIPT);

test("assistant-ui's AG-UI adapter renders a server-tool turn with text after it", async () => {
  const context = await served.browser.newContext({ baseURL: served.server.url });
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
