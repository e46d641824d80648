// The built app (vite build) in Debian's headless Chromium, served beside a stub step endpoint:
// the wasm loads as Vite emitted it, the turn runs, and every /agent/chat response is read to
// its end (none shows as cancelled).
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startStub } from "../stub-server.mjs";

test("a turn in the built Vite app", async () => {
  const stub = await startStub({ staticDir: fileURLToPath(new URL("./dist", import.meta.url)) });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
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
  } finally {
    await browser.close();
    await stub.close();
  }
});
