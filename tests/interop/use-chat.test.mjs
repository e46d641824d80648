// @ai-sdk/react's useChat in Debian's headless Chromium (playwright-core) against
// /agent/ai-sdk: a server-tool turn with text after it, rendered from the hook's messages.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { servedPage } from "./server.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const SCRIPT = {
  turns: [
    { when: { lastUserContains: "ageing", lacksResult: "domain_collections-aging" },
      text: ["Checking the ladder."], toolCalls: [{ name: "domain_collections-aging" }] },
    { text: ["Most of it", " is not yet due."] },
  ],
};

const served = servedPage(join(HERE, "browser/use-chat.jsx"), SCRIPT);

test("useChat renders a server-tool turn with text after it", async () => {
  const context = await served.browser.newContext({ baseURL: served.server.url });
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
