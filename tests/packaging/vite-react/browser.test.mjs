// The built app (vite build) in Debian's headless Chromium, served beside a stub step endpoint:
// the wasm loads as Vite emitted it, the turn runs, and every /agent/chat response is read to
// its end (none shows as cancelled). With `tabs={false}` on the provider, two tabs of one
// browser each run their own turns.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startStub } from "../stub-server.mjs";

/** Runs `body(stub, browser)` with the built app served beside the stub, in Chromium. */
async function withApp(body) {
  const stub = await startStub({ staticDir: fileURLToPath(new URL("./dist", import.meta.url)) });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    await body(stub, browser);
  } finally {
    await browser.close();
    await stub.close();
  }
}

test("a turn in the built Vite app", () =>
  withApp(async (stub, browser) => {
    const page = await browser.newPage();
    const errors = [];
    const failed = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("requestfailed", (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    await page.goto(stub.url);
    await page.getByRole("button", { name: "Ask" }).click();
    await page.getByTestId("answer").filter({ hasText: "Added" }).waitFor();
    assert.deepEqual(await page.getByRole("listitem").allTextContents(), ["milk"]);
    assert.equal(await page.getByTestId("tool-call").textContent(), "view:todo.list.add: done");
    await page.getByRole("region", { name: "Assistant" }).and(page.locator('[aria-busy="false"]')).waitFor();
    assert.equal(stub.requests.length, 2);
    assert.deepEqual(failed, []);
    assert.deepEqual(errors, []);
  }));

test("with tabs off, two tabs of one browser are each their own executor", () =>
  withApp(async (stub, browser) => {
    const context = await browser.newContext();
    const errors = [];
    const pages = [];
    for (let i = 0; i < 2; i++) {
      const page = await context.newPage();
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`${stub.url}/?tabs=off`);
      await page.locator('section[aria-label="Assistant"][data-tab-role="executor"]').waitFor();
      pages.push(page);
    }
    for (const page of pages) {
      await page.getByRole("button", { name: "Ask" }).click();
      await page.getByTestId("answer").filter({ hasText: "Added" }).waitFor();
      assert.deepEqual(await page.getByRole("listitem").allTextContents(), ["milk"], "the turn ran on this tab's screen");
    }
    assert.equal(stub.requests.length, 4, "two steps from each tab");
    assert.notEqual(stub.requests[0].conversationId, stub.requests[2].conversationId, "two conversations");
    assert.deepEqual(errors, []);
  }));
