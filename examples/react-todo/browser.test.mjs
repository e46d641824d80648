// Scripted turns through both examples in Debian's headless Chromium: todo-server (the Rust
// example, offline on examples/todo-server/script.json) serves this app's build (npm run build)
// over an in-memory database. The first turn needs the user twice: a confirmation in the browser
// before the screen's procedure runs, and an approval on the server before the model's delete.
// The same turn again across reloads: the conversation and its pending approval come back. Two
// tabs of one browser on one conversation: a turn asked in the follower runs once, in the
// executor, and shows in both. Then several short turns, watched through the DevTools protocol:
// every step request finishes.
//   TODO_SERVER_BIN   the built binary (default: the workspace's target/debug/todo-server)
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { openPage, startServer, toolCards } from "./harness.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

function startTodoServer() {
  const bin = process.env.TODO_SERVER_BIN ?? here("../../target/debug/todo-server");
  const script = here("../todo-server/script.json");
  const args = ["--listen", "127.0.0.1:0", "--database", "sqlite::memory:", "--model", `scripted:${script}`, "--static", here("./dist")];
  return startServer(bin, args);
}

const launch = () => chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });

async function signIn(page, url) {
  await page.goto(url);
  await page.getByLabel("Your name").fill("Sam");
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Signs in, adds "milk" and asks to tick it off and delete it: the browser's confirmation is
 *  allowed, and the turn ends with the delete waiting for the server's approval. */
async function askToDeleteTheMilk(page, url) {
  await signIn(page, url);
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
  return { todos, assistant };
}

test("a scripted turn: confirmed in the browser, approved on the server", async () => {
  const server = await startTodoServer();
  const browser = await launch();
  try {
    const { page, errors, refused } = await openPage(browser);
    const { todos, assistant } = await askToDeleteTheMilk(page, server.url);
    assert.deepEqual(await toolCards(page), ["domain:complete-todo: done", "domain:delete-todo: awaiting-approval"]);
    await page.locator("li s").filter({ hasText: "milk" }).waitFor(); // done, not yet deleted
    assert.equal(await todos.count(), 1);

    const approval = assistant.getByRole("group", { name: "Approval required" });
    await approval.getByRole("button", { name: "Approve" }).click();
    await approval.getByRole("status").filter({ hasText: "You approved delete-todo (id 1), and it completed." }).waitFor();
    assert.equal(await approval.getByRole("button").count(), 0);
    await todos.first().waitFor({ state: "detached" });
    assert.deepEqual(errors, []);
    assert.deepEqual(refused, ["401 /api/session"]); // before signing in
  } finally {
    await browser.close();
    server.stop();
  }
});

test("after a reload the conversation and its pending approval come back, and approving it works", async () => {
  const server = await startTodoServer();
  const browser = await launch();
  try {
    const { page, errors, refused } = await openPage(browser);
    const listed = [];
    page.on("request", (r) => new URL(r.url()).pathname === "/api/approvals" && listed.push(new URL(r.url()).search));
    const { todos, assistant } = await askToDeleteTheMilk(page, server.url);
    const pending = page.locator('[data-tool-card][data-approval="listed"]');
    await pending.waitFor();

    await page.reload();
    await page.getByRole("heading", { name: "Todos, signed in as Sam" }).waitFor();
    // The thread is back, and its approval is the server's pending one, not a new conversation.
    await assistant.getByText("Deleting it needs your approval").waitFor();
    await pending.waitFor();
    assert.deepEqual(await toolCards(page), ["domain:complete-todo: done", "domain:delete-todo: awaiting-approval"]);
    assert.equal(await assistant.locator('[data-role="user"]', { hasText: "I bought the milk" }).count(), 1);
    assert.equal(await todos.count(), 1);
    const conversations = new Set(listed.map((search) => new URLSearchParams(search).get("conversationId")));
    assert.equal(conversations.size, 1, `one conversation listed: ${listed}`);

    await pending.getByRole("button", { name: "Approve" }).click();
    await assistant.getByRole("status").filter({ hasText: "You approved delete-todo (id 1), and it completed." }).waitFor();
    await todos.first().waitFor({ state: "detached" });
    // The receipt the server appended is in the thread, so the next turn sends it.
    await assistant.locator('[data-role="assistant"] .dpas-text', { hasText: "You approved delete-todo (id 1), and it completed." }).waitFor();

    // Reloaded once more, the decided approval offers no buttons.
    await page.reload();
    await assistant.getByText("Deleting it needs your approval").waitFor();
    await page.locator('[data-tool-card][data-state="decided"]').waitFor();
    assert.equal(await page.getByRole("button", { name: "Approve" }).count(), 0);
    assert.deepEqual(errors, []);
    assert.deepEqual(refused, ["401 /api/session"]); // before signing in
  } finally {
    await browser.close();
    server.stop();
  }
});

test("two tabs of one browser: a turn asked in one runs once and shows in both", async () => {
  const server = await startTodoServer();
  const browser = await launch();
  try {
    const context = await browser.newContext();
    const first = await openPage(context);
    await signIn(first.page, server.url);
    const second = await openPage(context);
    await second.page.goto(server.url);
    const tabs = [first, second];
    for (const [{ page }, role] of [[first, "executor"], [second, "follower"]]) {
      await page.locator(`section[aria-label="Assistant"][data-tab-role="${role}"]`).waitFor();
    }
    const steps = [];
    for (const { page } of tabs) {
      page.on("request", (r) => r.method() === "POST" && new URL(r.url()).pathname === "/agent/chat" && steps.push(page));
    }

    await second.page.getByLabel("Message").fill("hello from the second tab");
    await second.page.getByRole("button", { name: "Send" }).click();
    for (const { page } of tabs) {
      const assistant = page.getByRole("region", { name: "Assistant" });
      await assistant.getByText("I can list, add, tick off and delete your todos.").waitFor();
      await assistant.and(page.locator('[aria-busy="false"]')).waitFor();
      assert.equal(await assistant.locator('[data-role="user"]', { hasText: "hello from the second tab" }).count(), 1);
    }
    assert.equal(steps.length, 1, "one step request");
    assert.equal(steps[0], first.page, "posted by the executor");
    assert.deepEqual([...first.errors, ...second.errors], []);
  } finally {
    await browser.close();
    server.stop();
  }
});

// The server ends each step's chunked body with its last frame (same read, measured with a raw
// socket) and marks it `cache-control: no-store`, as the contract says. Chromium cancels such a
// request after a script has read its body to the end (DevTools: "(canceled)"; CDP:
// `loadingFailed`, net::ERR_ABORTED) in about one step of three, unless the response was cloned
// first, as the package does (host-wasm/src/web/platform.rs).
test("every /agent/chat request of several turns finishes, none shows as cancelled", async () => {
  const server = await startTodoServer();
  const browser = await launch();
  try {
    const { page, errors } = await openPage(browser);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    const ends = new Map(); // request id → a promise of how the request ended
    const settle = new Map();
    cdp.on("Network.requestWillBeSent", (e) => {
      if (new URL(e.request.url).pathname !== "/agent/chat") return;
      ends.set(e.requestId, new Promise((resolve) => settle.set(e.requestId, resolve)));
    });
    cdp.on("Network.loadingFinished", (e) => settle.get(e.requestId)?.("finished"));
    cdp.on("Network.loadingFailed", (e) => settle.get(e.requestId)?.(`failed: ${e.errorText}${e.canceled ? " (canceled)" : ""}`));
    await signIn(page, server.url);
    const assistant = page.getByRole("region", { name: "Assistant" });
    const answers = assistant.getByText("I can list, add, tick off and delete your todos.");
    const turns = 8;
    for (let turn = 1; turn <= turns; turn++) {
      await page.getByLabel("Message").fill(`hello ${turn}`);
      await page.getByRole("button", { name: "Send" }).click();
      await answers.nth(turn - 1).waitFor();
      await assistant.and(page.locator('[aria-busy="false"]')).waitFor();
    }
    assert.equal(ends.size, turns, "one step request per turn");
    const outcomes = await Promise.all(ends.values());
    assert.deepEqual(outcomes, Array(turns).fill("finished"));
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.stop();
  }
});
