// The built app (vite build) in Debian's headless Chromium, served beside a stub step endpoint:
// the three-line chat of @dpas/host/assistant-ui sends the composer's text, the browser runs the
// model's tool call, and the thread shows what the model said, its tool card and its answer in
// the order the model produced them; a refused turn shows its error in the thread.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startStub } from "../stub-server.mjs";

const PREAMBLE = "Adding it to your list.";

test("a turn in the assistant-ui chat", async () => {
  const stub = await startStub({ staticDir: fileURLToPath(new URL("./dist", import.meta.url)), preamble: PREAMBLE });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const errors = [];
    const failed = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("requestfailed", (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    await page.goto(stub.url);
    await page.getByText("Ask me to add a todo.").waitFor();
    await page.getByRole("textbox", { name: "Message" }).fill("Add milk");
    await page.getByRole("button", { name: "Send" }).click();

    const answer = page.locator('[data-role="assistant"]').filter({ hasText: 'Added: {"added":"milk"}' });
    await answer.waitFor();
    // The turn ended: Send is back in place of Stop.
    await page.getByRole("button", { name: "Send" }).waitFor();
    assert.deepEqual(await page.getByRole("list", { name: "Todos" }).getByRole("listitem").allTextContents(), ["milk"]);
    assert.equal(await page.getByText("Ask me to add a todo.").count(), 0);

    // The thread in DOM order: the question, then what the model said, its card (the browser
    // ran it between the turn's two steps) and its answer, in the order the model produced them.
    const order = await page.locator(".dpas-thread").evaluate((thread) =>
      [...thread.querySelectorAll('[data-role="user"], [data-tool-card], [data-role="assistant"] .dpas-text')].map((node) =>
        node.dataset.role === "user"
          ? `user ${node.textContent}`
          : node.dataset.toolCard
            ? `card ${node.dataset.toolCard} ${node.dataset.state}`
            : `text ${node.textContent}`,
      ),
    );
    assert.deepEqual(order, [
      "user Add milk",
      `text ${PREAMBLE}`,
      "card view:todo.list.add done",
      'text Added: {"added":"milk"}',
    ]);

    // The card's details: the input the model gave and the browser's result.
    const card = page.locator('[data-tool-card="view:todo.list.add"]');
    await card.getByText("Details").click();
    const [input, result] = await card.locator("pre").allTextContents();
    assert.deepEqual(JSON.parse(input), { text: "milk" });
    assert.deepEqual(JSON.parse(result), { added: "milk" });

    assert.equal(stub.requests.length, 2);
    assert.deepEqual(stub.requests[0].messages.at(-1), { role: "user", content: "Add milk" });
    assert.deepEqual(failed, []);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await stub.close();
  }
});

test("a failed turn shows its error in the thread, and the composer is usable again", async () => {
  const stub = await startStub({ staticDir: fileURLToPath(new URL("./dist", import.meta.url)) });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    // The step endpoint refuses as a server without a session would.
    await page.route("**/agent/chat", (route) =>
      route.fulfill({
        status: 401,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "NOT_AUTHENTICATED", message: "Sign in first." } }),
      }),
    );
    await page.goto(stub.url);
    await page.getByRole("textbox", { name: "Message" }).fill("Add milk");
    await page.getByRole("button", { name: "Send" }).click();
    const alert = page.locator(".dpas-thread").getByRole("alert");
    await alert.waitFor();
    assert.equal(await alert.textContent(), "NOT_AUTHENTICATED: Sign in first.");
    await page.getByRole("button", { name: "Send" }).waitFor();
    assert.equal(stub.requests.length, 0);
  } finally {
    await browser.close();
    await stub.close();
  }
});

// A server call answered `approval-required`, played through the page's network: the step
// endpoint, the approvals API and the thread the card reloads after the decision.
const DELETE = { toolCallId: "call_del", wireName: "domain_delete-todos", canonicalId: "domain:delete-todos", input: {} };
const ASKED = { status: "approval-required", approvalId: "apr_1", message: "Deleting every todo needs your approval." };
const RECEIPT = "You approved delete-todos, and it completed.";

async function playApproval(page) {
  const seen = { decisions: [], lists: 0 };
  let pending = true;
  let history = [];
  const json = (route, body, status = 200) => route.fulfill({ status, contentType: "application/json", body: JSON.stringify(body) });
  await page.route("**/agent/chat", async (route) => {
    const body = route.request().postDataJSON();
    const said = "Clearing the list needs your approval.";
    const responseMessages = [
      { role: "assistant", content: [{ type: "text", text: said }, { type: "tool-call", toolCallId: DELETE.toolCallId, toolName: DELETE.wireName, input: {} }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: DELETE.toolCallId, toolName: DELETE.wireName, output: { type: "json", value: ASKED } }] },
    ];
    history = [...body.messages, ...responseMessages];
    const frames = [
      { type: "step-start", stepId: "stp_0", turnId: body.turnId, conversationId: body.conversationId, domainTools: [], scope: [] },
      { type: "text-delta", text: said },
      { type: "tool-call", ...DELETE, executor: "server" },
      { type: "tool-result", ...DELETE, ok: true, result: ASKED },
      { type: "step-finish", stepId: "stp_0", finishReason: "stop", responseMessages, pendingToolCalls: [] },
    ];
    await route.fulfill({ status: 200, contentType: "application/x-ndjson", body: frames.map((f) => JSON.stringify(f) + "\n").join("") });
  });
  await page.route("**/api/approvals**", async (route) => {
    const request = route.request();
    if (request.method() === "POST") {
      seen.decisions.push(request.postDataJSON());
      pending = false;
      history = [...history, { role: "assistant", content: [{ type: "text", text: RECEIPT }] }];
      return json(route, { receipt: { text: RECEIPT, ok: true }, resolution: { status: "completed", output: {} } });
    }
    seen.lists += 1;
    const card = { id: ASKED.approvalId, capabilityId: DELETE.canonicalId, status: "pending", surface: "model", reasons: [], risk: "high", input: {}, requestedAt: "", expiresAt: "" };
    return json(route, pending ? [card] : []);
  });
  await page.route("**/api/threads/**", (route) =>
    route.request().url().endsWith("/model-messages") ? json(route, history) : json(route, {}),
  );
  return seen;
}

test("a server approval: the card's Approve decides it, shows the receipt, and the thread reloads with it", async () => {
  const stub = await startStub({ staticDir: fileURLToPath(new URL("./dist", import.meta.url)) });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => (m.type() === "error" || m.type() === "warning") && errors.push(m.text()));
    const seen = await playApproval(page);
    await page.goto(stub.url);
    await page.getByRole("textbox", { name: "Message" }).fill("Clear my list");
    await page.getByRole("button", { name: "Send" }).click();

    const card = page.locator('[data-tool-card="domain:delete-todos"]');
    await card.and(page.locator('[data-state="awaiting-approval"]')).waitFor();
    const approval = card.getByRole("group", { name: "Approval required" });
    assert.match(await approval.textContent(), /Deleting every todo needs your approval\./);
    await page.getByRole("button", { name: "Send" }).waitFor(); // the turn ended; the approval waits
    await approval.getByRole("button", { name: "Approve" }).click();

    await approval.getByRole("status").filter({ hasText: RECEIPT }).waitFor();
    await card.and(page.locator('[data-state="decided"]')).waitFor();
    assert.equal(await approval.getByRole("button").count(), 0);
    const threadId = seen.decisions[0]?.threadId;
    assert.deepEqual(seen.decisions, [{ approved: true, threadId }]);
    assert.match(threadId, /^cnv_/);
    // The thread was reloaded: the receipt the server appended is a message of its own.
    await page.locator('[data-role="assistant"] .dpas-text').filter({ hasText: RECEIPT }).waitFor();
    assert.ok(seen.lists >= 1);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await stub.close();
  }
});
