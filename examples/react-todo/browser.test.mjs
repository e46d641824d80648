// One scripted turn through both examples in Debian's headless Chromium: todo-server (the Rust
// example, offline on examples/todo-server/script.json) serves this app's build (npm run build)
// over an in-memory database. The turn needs the user twice: a confirmation in the browser
// before the screen's procedure runs, and an approval on the server before the model's delete.
//   TODO_SERVER_BIN   the built binary (default: the workspace's target/debug/todo-server)
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { openPage, startServer } from "./harness.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

function startTodoServer() {
  const bin = process.env.TODO_SERVER_BIN ?? here("../../target/debug/todo-server");
  const script = here("../todo-server/script.json");
  const args = ["--listen", "127.0.0.1:0", "--database", "sqlite::memory:", "--model", `scripted:${script}`, "--static", here("./dist")];
  return startServer(bin, args);
}

test("a scripted turn: confirmed in the browser, approved on the server", async () => {
  const server = await startTodoServer();
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const { page, errors, refused } = await openPage(browser);
    await page.goto(server.url);
    await page.getByLabel("Your name").fill("Sam");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByLabel("New todo").fill("milk");
    await page.getByRole("button", { name: "Add" }).click();
    const todos = page.getByRole("region", { name: "Todos" }).getByRole("listitem");
    await todos.filter({ hasText: "milk" }).waitFor();

    await page.getByLabel("Message").fill("I bought the milk: tick it off and delete it");
    await page.getByRole("button", { name: "Send" }).click();
    // The screen's procedure waits for the user in the browser.
    const confirm = page.getByRole("alertdialog", { name: "Confirm" });
    await confirm.waitFor();
    assert.match(await confirm.textContent(), /domain:complete-todo \{"id":1\}/);
    await confirm.getByRole("button", { name: "Allow" }).click();
    // The model's delete waits for an approval on the server; the turn ends meanwhile.
    const assistant = page.getByRole("region", { name: "Assistant" });
    await assistant.getByText("Deleting it needs your approval").waitFor();
    await assistant.and(page.locator('[aria-busy="false"]')).waitFor();
    const calls = page.getByTestId("tool-call");
    assert.deepEqual(await calls.allTextContents(), [
      "domain:complete-todo: done",
      "domain:delete-todo: needs your approvalApprove Deny",
    ]);
    await page.locator("li s").filter({ hasText: "milk" }).waitFor(); // done, not yet deleted
    assert.equal(await todos.count(), 1);

    await calls.getByRole("button", { name: "Approve" }).click();
    await calls.getByRole("status").filter({ hasText: "You approved delete-todo (id 1), and it completed." }).waitFor();
    await todos.first().waitFor({ state: "detached" });
    assert.deepEqual(errors, []);
    assert.deepEqual(refused, ["401 /api/session"]); // before signing in
  } finally {
    await browser.close();
    server.stop();
  }
});
