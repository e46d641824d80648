// One executor across tabs: two pages of one browser context (one origin, one session, shared
// storage) on the same conversation. The first tab runs the turns and the browser tools (the
// demo's golden question runs once, on its screen), the second mirrors it and sends its
// messages there; closing or reloading the executor hands the conversation to the other tab;
// an approval decided in both runs once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  openApp,
  openTab,
  PENDING_ROWS,
  recordRequests,
  scriptedSuite,
  sendMessage,
  startServer,
  waitForCount,
  waitForTabRole,
  waitForText,
  waitForTurnEnd,
} from "./harness.mjs";

const GOLDEN_ANSWER = "7 invoices are overdue, worth €102,600";
const GOLDEN_ENDING = "Open a row's chase dialog and I can record the reminder against it.";
const RULES = {
  turns: [
    { when: { lastUserContains: "from the follower" }, text: ["Hello to every tab."] },
    { when: { lastUserContains: "after the handover" }, text: ["The new executor answers."] },
    {
      when: { lastUserContains: "Issue AUR-0141", lacksResult: "domain_issue-invoice" },
      toolCalls: [{ name: "domain_issue-invoice", input: { id: 5 } }],
    },
    { when: { hasResult: "domain_issue-invoice" }, text: ["The approval card is waiting for your decision."] },
    {
      when: { lastUserContains: "Reset the table", lacksResult: "view:invoices.all.resetView" },
      toolCalls: [{ name: "view:invoices.all.resetView", input: {} }],
    },
    { when: { lastUserContains: "Reset the table" }, text: ["The table is back to its defaults."] },
    { when: {}, text: ["Still here."] },
  ],
};

const suite = scriptedSuite(RULES, { before, after });
// The demo's golden scenario: the server scripts/e2e.sh started, or one of this file's.
let golden;
let goldenBase = process.env.E2E_BASE_URL;
before(async () => {
  if (goldenBase) return;
  golden = await startServer();
  goldenBase = golden.url;
});
after(async () => {
  await golden?.stop();
});

/** Runs `body(a, b)` on two tabs of one context on `path` (of the rules server unless `base`
 *  says), the first elected executor and the second its follower; neither may throw a page
 *  error. */
async function withTwoTabs(path, body, base) {
  const a = await openApp(suite.browser, base ?? suite.server.url, { role: "controller", path });
  try {
    await waitForTabRole(a.page, "executor");
    const b = await openTab(a.context, path);
    await waitForTabRole(b.page, "follower");
    await body(a, b);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await a.context.close();
  }
}

const textCount = async (page, needle) =>
  (await page.evaluate(() => document.querySelector(".thread")?.textContent ?? "")).split(needle).length - 1;

describe("two tabs on one conversation", () => {
  test("(a) the golden question asked in the executor runs once, and both tabs show the answer", async () => {
    await withTwoTabs(
      "/receivables/pending",
      async (a, b) => {
        await waitForCount(a.page, PENDING_ROWS, 13);
        await waitForCount(b.page, PENDING_ROWS, 13);
        const stepsA = recordRequests(a.page);
        const stepsB = recordRequests(b.page);
        await a.page.getByRole("button", { name: "What's overdue?" }).click();
        await waitForTurnEnd(a.page, 1);
        await waitForText(a.page, GOLDEN_ENDING);
        await waitForText(b.page, GOLDEN_ANSWER);
        await waitForText(b.page, GOLDEN_ENDING);
        await waitForTurnEnd(b.page, 1);
        assert.equal(stepsA.length, 3, "the executor posted the turn's three steps");
        assert.equal(stepsB.length, 0, "the follower posted nothing");
        // The browser tools ran once, on the executor's screen.
        await waitForCount(a.page, PENDING_ROWS, 7);
        assert.match(a.page.url(), /[?&]due=overdue/);
        assert.equal(await b.page.locator(PENDING_ROWS).count(), 13);
        assert.equal(new URL(b.page.url()).searchParams.get("due"), null);
        // The follower shows the same cards and the answer once.
        for (const id of ["domain:collections-aging", "view:invoices.pending.setFilters", "view:invoices.pending.readState"]) {
          assert.equal(await b.page.locator(`[data-tool-card="${id}"]`).count(), 1, id);
        }
        assert.equal(await textCount(b.page, GOLDEN_ENDING), 1);
      },
      goldenBase,
    );
  });

  test("(b, c) a message typed in the follower runs once and shows in both; the follower takes over when the executor closes", async () => {
    await withTwoTabs("/receivables/pending", async (a, b) => {
      const stepsA = recordRequests(a.page);
      const stepsB = recordRequests(b.page);

      // (b) A message typed in the follower runs in the executor, once, and shows in both.
      await sendMessage(b.page, "Say hello from the follower.");
      await waitForText(b.page, "Hello to every tab.");
      await waitForText(a.page, "Hello to every tab.");
      assert.equal(stepsA.length, 1, "one step, from the executor");
      assert.equal(stepsB.length, 0, "none from the follower");
      assert.equal(await a.page.locator(".msg.user").count(), 1);
      assert.equal(await textCount(a.page, "Hello to every tab."), 1);
      assert.equal(await textCount(b.page, "Hello to every tab."), 1);
      const conversationId = stepsA[0].conversationId;

      // (c) The executor's tab closes: the follower takes over with the conversation.
      await a.page.close();
      await waitForTabRole(b.page, "executor");
      assert.equal(await b.page.locator(".msg.user").count(), 1, "the thread is still on screen");
      await sendMessage(b.page, "Still there after the handover?");
      await waitForText(b.page, "The new executor answers.");
      assert.equal(stepsB.length, 1, "the new executor posted the step");
      assert.equal(stepsB[0].conversationId, conversationId, "on the same conversation");
      assert.equal(await b.page.locator(".msg.user").count(), 2);
      assert.equal(await textCount(b.page, "Hello to every tab."), 1);
    });
  });

  test("(d) a pending approval decided in both tabs runs once", async () => {
    await withTwoTabs("/receivables/pending", async (a, b) => {
      const steps = recordRequests(a.page);
      await sendMessage(a.page, "Issue AUR-0141 please");
      const approve = (page) =>
        page.getByRole("group", { name: "Approval required" }).getByRole("button", { name: "Approve" }).and(page.locator(":enabled"));
      // The follower shows the same card, its approval listed from the server.
      await approve(a.page).waitFor();
      await approve(b.page).waitFor();
      const decided = [a.page, b.page].map((page) =>
        page.waitForResponse(
          (r) => r.request().method() === "POST" && new URL(r.url()).pathname.startsWith("/api/approvals/"),
        ),
      );
      await Promise.all([approve(a.page).click(), approve(b.page).click()]);
      const statuses = (await Promise.all(decided)).map((r) => r.status()).sort();
      assert.deepEqual(statuses, [200, 409], "the first decision ran it, the second was refused as consumed");
      // The thread's receipt shows in both tabs.
      await waitForText(a.page, "and it completed.");
      await waitForText(b.page, "and it completed.");
      // Issued once: it is pending now, and the thread holds one receipt.
      const pending = await (await a.context.request.post("/rpc/list-invoices", { data: { kind: "pending" } })).json();
      assert.equal(pending.data.filter((r) => r.reference === "AUR-0141").length, 1);
      const thread = encodeURIComponent(steps[0].conversationId);
      const messages = await (await a.context.request.get(`/api/threads/${thread}/model-messages`)).json();
      const receipts = messages.filter((m) => m.role === "assistant" && JSON.stringify(m.content).includes("You approved"));
      assert.equal(receipts.length, 1, "one receipt in the thread");
    });
  });

  test("(e) the executor reloads while a confirmation is pending: the other tab takes over and asks", async () => {
    await withTwoTabs("/receivables/all", async (a, b) => {
      const dialog = (page) => page.getByRole("alertdialog", { name: "Allow this action?" });
      await a.page.getByRole("textbox", { name: "Message" }).fill("Reset the table, please.");
      await a.page.getByRole("button", { name: "Send" }).click();
      await dialog(a.page).getByText("view:invoices.all.resetView").waitFor();
      // The follower shows the executor's dialog too.
      await dialog(b.page).getByText("view:invoices.all.resetView").waitFor();

      await a.page.reload();
      const stepsA = recordRequests(a.page);
      const stepsB = recordRequests(b.page);
      await waitForTabRole(b.page, "executor");
      await a.page.getByRole("heading", { name: "All invoices" }).waitFor();
      await waitForTabRole(a.page, "follower");
      // The new executor asks again (the thread's call is unanswered); the reloaded tab mirrors it.
      await dialog(b.page).getByText("view:invoices.all.resetView").waitFor();
      await dialog(a.page).getByText("view:invoices.all.resetView").waitFor();
      await dialog(b.page).getByRole("button", { name: "Allow" }).click();
      await waitForText(b.page, "The table is back to its defaults.");
      await waitForText(a.page, "The table is back to its defaults.");
      assert.equal(stepsB.length, 1, "one step after the handover: the answered call");
      assert.equal(stepsA.length, 0, "none from the reloaded follower");
      const last = stepsB[0].messages.at(-1);
      assert.equal(last.role, "tool");
      assert.deepEqual(last.content[0].output.value, { done: true });
      await dialog(a.page).waitFor({ state: "detached" });
      assert.equal(await dialog(b.page).count(), 0, "nothing is left to confirm");
    });
  });
});
