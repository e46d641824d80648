// One scripted turn through the whole example in Debian's headless Chromium: this backend in
// front of the workspace's host-server binary (--auth jwt, the capabilities, routes and prompt
// of this folder, script.json as the model), serving examples/react-todo's build (npm run
// build there). The model clears the list; the user approves on the card; the backend's todos
// are gone, and every call it got came with the user's token and an invocation id.
//   HOST_SERVER_BIN   the built binary (default: the workspace's target/debug/host-server)
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { openPage, startServer, toolCards } from "../react-todo/harness.mjs";
import { AUDIENCE, COOKIE, ISSUER, createBackend } from "./backend.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const secret = "browser-test-secret-of-the-todo-example-0123";

// host-server as the README runs it, except for the addresses: the capabilities file's backend
// URLs name the port this test's backend got.
async function startHostServer(backendOrigin, dir) {
  const file = join(dir, "capabilities.json");
  const capabilities = await readFile(here("./capabilities.json"), "utf8");
  await writeFile(file, capabilities.replaceAll("http://127.0.0.1:3000/", `${backendOrigin}/`));
  const bin = process.env.HOST_SERVER_BIN ?? here("../../target/debug/host-server");
  const args = [
    "--listen", "127.0.0.1:0", "--database", "sqlite::memory:",
    "--auth", "jwt", "--jwt-cookie", COOKIE, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE,
    "--capabilities", file, "--routes", here("./routes.json"), "--prompt-file", here("./prompt.txt"),
    "--model", `scripted:${here("./script.json")}`, "--static", here("../react-todo/dist"),
  ];
  return startServer(bin, args, { ...process.env, DPAS_JWT_SECRET: secret });
}

test("a scripted turn: the model clears the list once the user approves, on the backend's own data", async () => {
  const backend = createBackend({ secret });
  await new Promise((resolve) => backend.server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${backend.server.address().port}`;
  const dir = await mkdtemp(join(tmpdir(), "todo-backend-"));
  const hostServer = await startHostServer(origin, dir);
  backend.upstream = hostServer.url;
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const { page, errors, refused } = await openPage(browser);
    await page.goto(origin); // the backend's origin: host-server is behind it
    await page.getByLabel("Your name").fill("Sam");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Todos, signed in as Sam" }).waitFor(); // host-server read the cookie
    await page.getByLabel("New todo").fill("milk");
    await page.getByRole("button", { name: "Add" }).click();
    const todos = page.getByRole("region", { name: "Todos" }).getByRole("listitem");
    await todos.filter({ hasText: "milk" }).waitFor();
    assert.deepEqual(backend.todosOf("sam"), [{ id: 1, text: "milk", done: false }]);

    await page.getByLabel("Message").fill("Please clear my list");
    await page.getByRole("button", { name: "Send" }).click();
    const assistant = page.getByRole("region", { name: "Assistant" });
    await assistant.getByText("Clearing your list needs your approval").waitFor();
    await assistant.and(page.locator('[aria-busy="false"]')).waitFor();
    assert.deepEqual(await toolCards(page), ["domain:list-todos: done", "domain:delete-all-todos: awaiting-approval"]);
    assert.equal(await todos.count(), 1); // nothing deleted before the approval
    assert.equal(backend.todosOf("sam").length, 1);

    const approval = assistant.getByRole("group", { name: "Approval required" });
    await approval.getByRole("button", { name: "Approve" }).click();
    await approval.getByRole("status").filter({ hasText: "You approved delete-all-todos, and it completed." }).waitFor();
    await todos.first().waitFor({ state: "detached" });
    assert.deepEqual(backend.todosOf("sam"), []);

    // Each call reached the backend with Sam's own token (checked there) and an invocation id
    // of host-server's; the delete once, after the approval.
    const made = backend.calls.map((c) => c.id);
    assert.equal(made.filter((id) => id === "delete-all-todos").length, 1);
    const deletedAt = made.indexOf("delete-all-todos");
    assert.deepEqual(made.filter((id) => id === "add-todo"), ["add-todo"]);
    assert.ok(made.indexOf("add-todo") < deletedAt);
    assert.ok(made.slice(deletedAt + 1).includes("list-todos")); // the app's refresh after the receipt
    for (const call of backend.calls) {
      assert.equal(call.user, "sam");
      assert.match(call.invocationId, /^exe_/);
    }
    assert.equal(new Set(backend.calls.map((c) => c.invocationId)).size, backend.calls.length);
    // ... and the delete's invocation id is the run host-server audited for the approval, as Sam's.
    const audit = await page.evaluate(() => fetch("/api/audit?limit=500").then((r) => r.json()));
    const deleted = backend.calls.find((c) => c.id === "delete-all-todos");
    const audited = audit.entries.filter((e) => e.executionId === deleted.invocationId);
    assert.deepEqual(audited.map((e) => [e.type, e.capabilityId, e.actorId]), [
      ["approval.consumed", "delete-all-todos", "sam"],
      ["capability.started", "delete-all-todos", "sam"],
      ["capability.completed", "delete-all-todos", "sam"],
      ["operation.outcome", "delete-all-todos", "sam"],
    ]);
    assert.deepEqual(errors, []);
    assert.deepEqual(refused, ["401 /api/session"]); // before signing in
  } finally {
    await browser.close();
    hostServer.stop();
    backend.server.close();
    await rm(dir, { recursive: true, force: true });
  }
});
