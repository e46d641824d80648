// The assistant dock, end to end: the real server, its scripted models, @dpas/host in the
// real build, Debian's Chromium.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  artifactPath,
  launchBrowser,
  openApp,
  pageText,
  PENDING_ROWS,
  recordFrames,
  recordRequests,
  sendMessage,
  startServer,
  waitForCount,
  waitForText,
  waitForTurnEnd,
  writeScript,
} from "./harness.mjs";

const GOLDEN_ANSWER = "7 invoices are overdue, worth €102,600";
const CONTROLLER_ENDING = "Open a row's chase dialog and I can record the reminder against it.";
const ANALYST_ENDING = "Issuing and deleting are not available to this identity, so I stopped at reading.";

/** A rules script for the second server: an approval turn, a confirmed view action, a slow
 *  turn to cancel, the golden question through the meta tools, and a plain answer for
 *  anything else. */
const RULES = {
  turns: [
    {
      when: { lastUserContains: "Issue AUR-0141", lacksResult: "domain_issue-invoice" },
      text: ["Issuing **AUR-0141** sends it to the client, so it needs your approval.\n"],
      toolCalls: [{ name: "domain_issue-invoice", input: { id: 5 } }],
    },
    { when: { hasResult: "domain_issue-invoice" }, text: ["The approval card is waiting for your decision."] },
    {
      when: { lastUserContains: "Take me to the clients", lacksResult: "view_app__navigation__goTo" },
      toolCalls: [{ name: "view_app__navigation__goTo", input: { path: "/receivables/clients" } }],
    },
    {
      when: { lastUserContains: "Take me to the clients", lacksResult: "view_app__navigation__readCurrentRoute" },
      toolCalls: [{ name: "view_app__navigation__readCurrentRoute", input: {} }],
    },
    { when: { lastUserContains: "Take me to the clients" }, text: ["Here are your clients."] },
    {
      when: { lastUserContains: "Settle DUN-0041", lacksResult: "domain_mark-invoice-paid" },
      toolCalls: [{ name: "domain_mark-invoice-paid", input: { id: 19 } }],
    },
    { when: { lastUserContains: "Settle DUN-0041" }, text: ["DUN-0041 is settled."] },
    {
      when: { lastUserContains: "Note the promise", lacksResult: "view_invoices__pending__setFilters" },
      toolCalls: [{ name: "view_invoices__pending__setFilters", input: { chase: "18" } }],
    },
    {
      when: { lastUserContains: "Note the promise", lacksResult: "domain_update-collection-status" },
      toolCalls: [{ name: "domain_update-collection-status", input: { note: "Promised by Friday (assistant)." } }],
    },
    { when: { lastUserContains: "Note the promise" }, text: ["Recorded on the open invoice."] },
    {
      when: { lastUserContains: "Reset the table", lacksResult: "view_invoices__all__resetView" },
      toolCalls: [{ name: "view_invoices__all__resetView", input: {} }],
    },
    { when: { lastUserContains: "Reset the table" }, text: ["The reset request has an answer."] },
    { when: { lastUserContains: "slowly" }, delayMs: 15000, text: ["This answer arrives too late to be seen."] },
    {
      when: { offered: "surface_discover", lacksResult: "surface_discover" },
      toolCalls: [{ name: "surface_discover", input: {} }],
    },
    {
      when: { offered: "surface_discover", lacksResult: "surface_act" },
      toolCalls: [
        { name: "surface_act", input: { capabilityId: "view:invoices.pending.setFilters", input: { due: "overdue" } } },
      ],
    },
    {
      when: { offered: "surface_discover", lacksResult: "surface_read" },
      toolCalls: [{ name: "surface_read", input: { capabilityId: "view:invoices.pending.readState" } }],
    },
    { when: { offered: "surface_discover" }, text: ["**7** invoices are overdue, worth €102,600."] },
    {
      when: { lastUserContains: "Summarise the ledger", lacksResult: "domain_receivables-summary" },
      text: ["Reading the summary first."],
      toolCalls: [{ name: "domain_receivables-summary", input: {} }],
    },
    { when: { lastUserContains: "Summarise the ledger" }, text: ["The summary is in the card above."] },
    { when: {}, text: ["Still here: the thread is intact."] },
  ],
};

let browser;
let golden;
let goldenBase;
let rules;
let script;

before(async () => {
  browser = await launchBrowser();
  if (process.env.E2E_BASE_URL) goldenBase = process.env.E2E_BASE_URL;
  else {
    golden = await startServer();
    goldenBase = golden.url;
  }
  script = writeScript(RULES);
  rules = await startServer({ model: `scripted:${script.file}` });
});

after(async () => {
  await browser?.close();
  await golden?.stop();
  await rules?.stop();
  script?.cleanup();
});

const card = (page, id) => page.locator(`[data-tool-card="${id}"]`);

async function askWhatsOverdue(page) {
  const before = await page.locator(".msg.user").count();
  await page.getByRole("button", { name: "What's overdue?" }).click();
  await waitForTurnEnd(page, before + 1);
}

describe("golden scenario (scripted model)", () => {
  test("a controller asks what is overdue: both planes act, the table narrows, the answer is right", async () => {
    const { context, page, errors, hooked: recorder } = await openApp(browser, goldenBase, { beforeLoad: recordFrames });
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByText("How can I help?").waitFor();
      await page.getByText("runs on the scripted model").waitFor();
      await page.screenshot({ path: artifactPath("first-load.png") });
      const requests = recordRequests(page);
      await askWhatsOverdue(page);

      // The view catalog the first step sent: the demo's 16 descriptors in its order, the
      // chase reference unavailable while no dialog is open.
      const first = requests[0];
      assert.deepEqual(first.catalog.scope, ["app", "invoices", "reporting", "collections"]);
      assert.deepEqual(
        first.catalog.frontendTools.map((t) => t.canonicalId),
        [
          "view:app.navigation.readCurrentRoute",
          "view:app.navigation.goTo",
          "view:app.session.read",
          ...["readState", "readFilters", "readSelection", "readColumns", "readColumnFilters"].map(
            (n) => `view:invoices.pending.${n}`,
          ),
          ...[
            "setFilters",
            "setColumnFilters",
            "clearFilters",
            "sort",
            "selectRows",
            "setColumnVisibility",
            "moveColumn",
          ].map((n) => `view:invoices.pending.${n}`),
          "domain:update-collection-status",
        ],
      );
      const chase = first.catalog.frontendState.find((s) => s.wireName === "domain_update-collection-status");
      assert.deepEqual(chase, {
        wireName: "domain_update-collection-status",
        available: false,
        unavailableReason: "Open an invoice's chase dialog first",
      });

      await card(page, "domain:collections-aging").waitFor();
      await card(page, "view:invoices.pending.setFilters").waitFor();
      await card(page, "view:invoices.pending.readState").waitFor();
      await waitForCount(page, PENDING_ROWS, 7);
      assert.match(page.url(), /[?&]due=overdue/);
      await waitForText(page, GOLDEN_ANSWER);
      await waitForText(page, CONTROLLER_ENDING);

      // Reasoning is folded apart from the answer, and no channel marker reaches the page.
      const thought = page.locator(".reasoning").first();
      await thought.getByText("Thought").waitFor();
      const reasoning = await thought.textContent();
      assert.ok(reasoning.length > "Thought".length);
      const answers = await page.locator(".msg.assistant .markdown").allTextContents();
      assert.ok(answers.some((a) => a.includes(GOLDEN_ANSWER)));
      assert.ok(answers.every((a) => !a.includes(reasoning.slice("Thought".length).trim())));
      assert.ok(!(await pageText(page)).includes("<|channel|>"));

      // Input and output apart: 3 steps × 16 each.
      await page.getByRole("group", { name: "Tokens in this conversation: 48 input, 48 output" }).waitFor();

      await page.screenshot({ path: artifactPath("main.png") });

      // The inspector shows the turn's events.
      await page.getByRole("button", { name: "Inspector" }).click();
      const inspector = page.getByRole("region", { name: "Inspector" });
      await inspector.locator("li").first().waitFor();

      // Every tool call was answered.
      assert.equal(await page.locator(".tool-card.state-running").count(), 0);
      const starts = (await recorder.all()).filter((f) => f.type === "step-start");
      assert.equal(starts.length, 3);
      assert.ok(starts[0].domainTools.some((t) => t.wireName === "domain_issue-invoice"));
      assert.deepEqual(errors, []);

    } finally {
      await context.close();
    }
  });

  test("asked while the table is still loading, the assistant reads the rows once they arrive", async () => {
    // The pending invoices are held back until the assistant's readState is under way, so the
    // read starts on a table that is only loading (it once answered "nothing is overdue").
    let release;
    const held = new Promise((resolve) => {
      release = resolve;
    });
    const { context, page } = await openApp(browser, goldenBase, {
      beforeLoad: (p) =>
        p.route("**/rpc/list-invoices", async (route) => {
          await held;
          await route.continue();
        }),
    });
    try {
      await page.getByText("Loading…").waitFor();
      await page.getByRole("button", { name: "What's overdue?" }).click();
      await card(page, "view:invoices.pending.readState").waitFor();
      assert.equal(await page.locator(PENDING_ROWS).count(), 0);
      release();
      await waitForTurnEnd(page, 1);
      await waitForText(page, GOLDEN_ANSWER);
      await waitForCount(page, PENDING_ROWS, 7);
    } finally {
      release();
      await context.close();
    }
  });

  test("when the rows cannot be loaded, the read says so instead of reporting an empty table", async () => {
    const { context, page } = await openApp(browser, goldenBase, {
      beforeLoad: (p) =>
        p.route("**/rpc/list-invoices", (route) =>
          route.fulfill({
            status: 503,
            contentType: "application/json",
            body: JSON.stringify({ status: "error", error: { code: "UNAVAILABLE", message: "The ledger is down." } }),
          }),
        ),
    });
    try {
      await askWhatsOverdue(page);
      const read = card(page, "view:invoices.pending.readState");
      await read.and(page.locator(".state-error")).waitFor();
      await read.getByRole("button", { name: "Details" }).click();
      const result = await read.locator("pre.json").last().textContent();
      assert.equal(JSON.parse(result).error.code, "PRECONDITION_FAILED");
      assert.match(JSON.parse(result).error.message, /could not be loaded: The ledger is down\./);
    } finally {
      await context.close();
    }
  });

  test("after a reload the thread comes back answered, and a new turn works", async () => {
    const { context, page } = await openApp(browser, goldenBase);
    try {
      await askWhatsOverdue(page);
      await waitForText(page, GOLDEN_ANSWER);
      const meter = async () => ({
        input: await page.locator('[data-meter="input"]').textContent(),
        output: await page.locator('[data-meter="output"]').textContent(),
      });
      const before = await meter();
      assert.notEqual(before.input, "0");
      await page.reload();
      await page.getByRole("heading", { name: "Pending invoices" }).waitFor();
      await card(page, "domain:collections-aging").waitFor();
      await card(page, "view:invoices.pending.setFilters").waitFor();
      await card(page, "view:invoices.pending.readState").waitFor();
      await waitForText(page, GOLDEN_ANSWER);
      // The conversation's usage comes back with it (the thread's stored sum).
      await page.locator('[data-meter="input"]').waitFor();
      assert.deepEqual(await meter(), before);
      assert.equal(await page.locator(".tool-card.state-running").count(), 0);
      assert.equal(await page.locator(".msg.user").count(), 1);

      await sendMessage(page, "And how much is that in total?");
      await page.waitForFunction(
        (answer) =>
          [...document.querySelectorAll(".msg.assistant .markdown")].filter((m) => m.textContent.includes(answer))
            .length === 2,
        GOLDEN_ANSWER,
      );
      assert.equal(await page.locator('[role="alert"]').count(), 0);

      // The thread list offers it, and "New thread" empties the dock.
      await page.getByRole("button", { name: "New thread" }).click();
      await page.getByText("How can I help?").waitFor();
      await page.getByRole("button", { name: "Recent threads" }).click();
      await page.getByRole("list", { name: "Recent threads" }).getByRole("button").first().click();
      await waitForText(page, GOLDEN_ANSWER);
      await card(page, "domain:collections-aging").first().waitFor();
    } finally {
      await context.close();
    }
  });

  test("an analyst is offered no write tool and gets the read-only ending", async () => {
    const { context, page, hooked: recorder } = await openApp(browser, goldenBase, {
      role: "analyst",
      beforeLoad: recordFrames,
    });
    try {
      await page.getByText("Ada Analyst").waitFor();
      await askWhatsOverdue(page);
      await waitForText(page, GOLDEN_ANSWER);
      // The ending streams in after the figures: wait for all of it before reading the
      // message, or the read can catch it half-rendered.
      await waitForText(page, ANALYST_ENDING);
      const answers = await page.locator(".msg.assistant .markdown").allTextContents();
      assert.ok(answers.at(-1).trim().endsWith(ANALYST_ENDING), answers.at(-1));
      const starts = (await recorder.all()).filter((f) => f.type === "step-start");
      assert.ok(starts.length > 0);
      for (const start of starts) {
        assert.deepEqual(
          start.domainTools.map((t) => t.wireName),
          ["domain_list-invoices", "domain_receivables-summary", "domain_collections-aging"],
        );
        assert.ok(start.domainTools.every((t) => t.sideEffect === "read"));
      }
    } finally {
      await context.close();
    }
  });
});

describe("rules-scripted model", () => {
  test("approving a model's request to issue a draft issues it and refreshes the KPIs", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await page.getByRole("group", { name: "Outstanding" }).getByText("€200,500").waitFor();
      await sendMessage(page, "Issue AUR-0141 please");
      const approval = page.getByRole("group", { name: "Approval required" });
      await approval.waitFor();
      await card(page, "domain:issue-invoice").waitFor();
      // The card shows what will be acted on, as the server bound it.
      await approval.getByTestId("approval-target").getByText("AUR-0141 · Aurora Labs · €12,750 · draft", { exact: false }).waitFor();
      // Nothing is written before the decision.
      const before = await (await context.request.post("/rpc/list-invoices", { data: { kind: "draft" } })).json();
      assert.ok(before.data.some((r) => r.reference === "AUR-0141"));

      await page.screenshot({ path: artifactPath("approval.png") });
      await approval.getByRole("button", { name: "Approve" }).click();
      await page.getByText(/You approved .* and it completed\./).first().waitFor();
      await page.getByRole("group", { name: "Outstanding" }).getByText("€213,250").waitFor();
      await waitForCount(page, PENDING_ROWS, 14);
      const after = await (await context.request.post("/rpc/list-invoices", { data: { kind: "pending" } })).json();
      assert.ok(after.data.some((r) => r.reference === "AUR-0141"));
    } finally {
      await context.close();
    }
  });

  test("a pending approval comes back after a reload, and approving it then issues the draft", async () => {
    const { context, page, errors } = await openApp(browser, rules.url);
    try {
      await sendMessage(page, "Issue AUR-0141 please");
      const approval = page.getByRole("group", { name: "Approval required" });
      await approval.getByRole("button", { name: "Approve" }).and(page.locator(":enabled")).waitFor();

      await page.reload();
      await page.getByRole("heading", { name: "Pending invoices" }).waitFor();
      // The same thread, its one request, and the server's pending approval on its card.
      await waitForText(page, "The approval card is waiting for your decision.");
      assert.equal(await page.locator(".msg.user").count(), 1);
      await approval.getByTestId("approval-target").getByText("AUR-0141 · Aurora Labs · €12,750 · draft", { exact: false }).waitFor();
      const listed = await (await context.request.get("/api/approvals")).json();
      assert.equal(listed.length, 1);
      const pending = await (
        await context.request.get(`/api/approvals?conversationId=${encodeURIComponent(listed[0].conversationId)}`)
      ).json();
      assert.deepEqual(pending.map((a) => a.id), [listed[0].id]);

      await approval.getByRole("button", { name: "Approve" }).click();
      await approval.getByRole("status").getByText(/You approved .* and it completed\./).waitFor();
      await page.getByRole("group", { name: "Outstanding" }).getByText("€213,250").waitFor();
      assert.deepEqual(await (await context.request.get("/api/approvals")).json(), []);

      // Decided, it stays decided across the next reload: no buttons, who decided it.
      await page.reload();
      await approval.getByRole("status").getByText("Approved by Carla Controller.").waitFor();
      assert.equal(await approval.getByRole("button", { name: "Approve" }).count(), 0);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test("denying changes nothing", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await sendMessage(page, "Issue AUR-0141 please");
      const approval = page.getByRole("group", { name: "Approval required" });
      await approval.getByRole("button", { name: "Deny" }).click();
      await page.getByText(/You denied .*Nothing was changed\./).first().waitFor();
      await page.getByRole("group", { name: "Outstanding" }).getByText("€200,500").waitFor();
      await waitForCount(page, PENDING_ROWS, 13);
      const drafts = await (await context.request.post("/rpc/list-invoices", { data: { kind: "draft" } })).json();
      assert.ok(drafts.data.some((r) => r.reference === "AUR-0141"));
    } finally {
      await context.close();
    }
  });

  test("a message that calls a tool and then answers shows its parts in that order", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await sendMessage(page, "Summarise the ledger");
      await waitForText(page, "The summary is in the card above.");
      // One message (the server ran the call between its two model steps), read in DOM order.
      const order = await page
        .locator(".msg.assistant")
        .last()
        .evaluate((message) =>
          [...message.querySelectorAll("[data-tool-card], .markdown")].map((node) =>
            node.matches("[data-tool-card]") ? `card ${node.dataset.toolCard}` : `text ${node.textContent.trim()}`,
          ),
        );
      assert.deepEqual(order, [
        "text Reading the summary first.",
        "card domain:receivables-summary",
        "text The summary is in the card above.",
      ]);
    } finally {
      await context.close();
    }
  });

  test("the shell's navigation capability moves the app, and the next read sees the new route", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await sendMessage(page, "Take me to the clients page");
      await page.getByRole("heading", { name: "Clients" }).waitFor();
      await waitForCount(page, "[data-client-row]", 5);
      assert.match(page.url(), /\/receivables\/clients$/);
      const read = card(page, "view:app.navigation.readCurrentRoute");
      await read.getByRole("button", { name: "Details" }).click();
      await read.getByText('"title": "Clients — Receivables"').waitFor();
      await waitForText(page, "Here are your clients.");
    } finally {
      await context.close();
    }
  });

  test("a server-side write by the model refreshes the screen", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await sendMessage(page, "Settle DUN-0041 please");
      await card(page, "domain:mark-invoice-paid").waitFor();
      await waitForText(page, "DUN-0041 is settled.");
      await page.getByRole("group", { name: "Outstanding" }).getByText("€169,000").waitFor();
      await waitForCount(page, PENDING_ROWS, 12);
    } finally {
      await context.close();
    }
  });

  test("the chase dialog's bound reference writes the invoice on screen, and the dialog refreshes", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      const requests = recordRequests(page);
      await sendMessage(page, "Note the promise on DUN-0037");
      const dialog = page.getByRole("dialog", { name: "Chase DUN-0037" });
      await dialog.waitFor();
      assert.match(page.url(), /[?&]chase=18/);
      await card(page, "view:invoices.pending.setFilters").waitFor();
      const write = card(page, "domain:update-collection-status");
      await write.waitFor();
      await waitForText(page, "Recorded on the open invoice.");
      const className = await write.getAttribute("class");
      assert.ok(className.includes("state-done"), `${className}: ${await write.textContent()}`);
      // The write reconciled the screen: the dialog's form shows the stored note.
      await page.waitForFunction(
        () => document.querySelector('[role="dialog"] textarea')?.value === "Promised by Friday (assistant).",
      );
      // Once the dialog was open, the reference was offered bound to that invoice: invoiceId
      // locked out of the schema, the live note naming the invoice.
      const bound = requests.find(
        (r) => r.catalog.frontendState.find((s) => s.wireName === "domain_update-collection-status").available,
      );
      const descriptor = bound.catalog.frontendTools.find((t) => t.wireName === "domain_update-collection-status");
      assert.equal(descriptor.inputSchema.properties.invoiceId, undefined);
      assert.equal(
        bound.catalog.frontendState.find((s) => s.wireName === "domain_update-collection-status").note,
        "Bound to DUN-0037 (Dunmore Civic Trust, €26,750, 58 days overdue).",
      );
      const rows = await (await context.request.post("/rpc/list-invoices", { data: { kind: "pending" } })).json();
      const row = rows.data.find((r) => r.id === 18);
      assert.equal(row.collection.note, "Promised by Friday (assistant).");
      assert.equal(row.collection.reminders_sent, 1);
    } finally {
      await context.close();
    }
  });

  test("meta mode answers the golden question through the surface_* tools", async () => {
    const { context, page, hooked: recorder } = await openApp(browser, rules.url, { beforeLoad: recordFrames });
    try {
      await page.getByLabel("Catalog mode").selectOption("meta");
      await askWhatsOverdue(page);
      await page.locator('[data-wire-name="surface_discover"]').waitFor();
      await page.locator('[data-wire-name="surface_act"]').waitFor();
      const read = page.locator('[data-wire-name="surface_read"]');
      await read.waitFor();
      await waitForCount(page, PENDING_ROWS, 7);
      assert.match(page.url(), /[?&]due=overdue/);
      await read.getByRole("button", { name: "Details" }).click();
      await read.getByText(/"rowCount": 7/).waitFor();
      await waitForText(page, GOLDEN_ANSWER);
      const starts = (await recorder.all()).filter((f) => f.type === "step-start");
      assert.ok(starts.length >= 4);
      assert.ok(starts.every((s) => s.catalogMode === "meta"));
    } finally {
      await context.close();
    }
  });

  test("stopping a turn mid-way keeps the thread usable", async () => {
    const { context, page } = await openApp(browser, rules.url);
    try {
      await page.getByRole("textbox", { name: "Message" }).fill("Think about it slowly");
      await page.getByRole("button", { name: "Send" }).click();
      await page.getByRole("button", { name: "Stop" }).click();
      await waitForTurnEnd(page, 1);
      assert.ok(!(await pageText(page)).includes("arrives too late"));

      await sendMessage(page, "hello again");
      await waitForText(page, "Still here: the thread is intact.");
      assert.equal(await page.locator('.dock [role="alert"]').count(), 0);
      assert.equal(await page.locator(".msg.user").count(), 2);
    } finally {
      await context.close();
    }
  });
});

describe("confirmation dialog (rules-scripted model)", () => {
  const ALL_ROWS = 'table[aria-label="All invoices"] [data-invoice-row]';
  // Aurora Labs, sorted by amount ascending, Segment hidden; "sent" is picked in the UI.
  const NARROWED = "/receivables/all?q=aurora&sort=amount.asc&cols=-segment";
  const RESET = "view:invoices.all.resetView";

  /** The All invoices screen with search, sort and layout in the URL and a column filter set:
   *  4 sent Aurora invoices, cheapest first. */
  async function openNarrowed() {
    const opened = await openApp(browser, rules.url, { path: NARROWED });
    const { page } = opened;
    await page.getByLabel("Filter by Status").selectOption("sent");
    await waitForCount(page, ALL_ROWS, 4);
    assert.deepEqual(await refs(page), ["AUR-0137", "AUR-0136", "AUR-0134", "AUR-0138"]);
    assert.deepEqual(await headers(page), ["Invoice", "Client", "Status", "Amount", "Issued", "Due"]);
    return opened;
  }

  const refs = (page) => page.locator(`${ALL_ROWS} td:first-child`).allTextContents();
  const headers = (page) =>
    page.locator('table[aria-label="All invoices"] th').evaluateAll((ths) => ths.map((th) => th.innerText.replace(/[▲▼]/g, "").trim()));

  /** Sends the scripted request and waits for the dialog, which holds the turn. */
  async function askToReset(page) {
    await page.getByRole("textbox", { name: "Message" }).fill("Reset the table please");
    await page.getByRole("button", { name: "Send" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Allow this action?" });
    await dialog.getByText(RESET, { exact: true }).waitFor();
    await dialog.getByText("Reset this table's search, filters, sort, column layout and selection to their defaults.").waitFor();
    assert.equal(await page.locator('.dock[aria-busy="true"]').count(), 1);
    return dialog;
  }

  async function resultOf(page) {
    const reset = card(page, RESET);
    await reset.getByRole("button", { name: "Details" }).click();
    return reset;
  }

  /** After a denial: the card holds the typed denial, the model was told, the screen is as it was. */
  async function assertDenied(page, requests) {
    await waitForTurnEnd(page, 1);
    await waitForText(page, "The reset request has an answer.");
    const reset = await resultOf(page);
    const className = await reset.getAttribute("class");
    assert.ok(className.includes("state-error") && !className.includes("state-done"), className);
    await reset.getByText(/"code": "CONFIRMATION_INVALID"/).waitFor();
    await reset.getByText(/"reason": "denied"/).waitFor();
    await reset.getByText(`The user declined to run ${RESET}.`, { exact: false }).waitFor();
    // The model's next step carried the denial, not a success.
    assert.equal(requests.length, 2);
    const sent = JSON.stringify(requests[1]);
    assert.ok(sent.includes("CONFIRMATION_INVALID"), sent.slice(0, 500));

    const url = new URL(page.url());
    assert.equal(url.pathname, "/receivables/all");
    assert.equal(url.searchParams.get("q"), "aurora");
    assert.equal(url.searchParams.get("sort"), "amount.asc");
    assert.equal(url.searchParams.get("cols"), "-segment");
    assert.equal(await page.getByLabel("Filter by Status").inputValue(), "sent");
    await waitForCount(page, ALL_ROWS, 4);
    assert.deepEqual(await refs(page), ["AUR-0137", "AUR-0136", "AUR-0134", "AUR-0138"]);
  }

  test("allowing the confirmed resetView resets search, sort, layout and column filters", async () => {
    const { context, page, errors } = await openNarrowed();
    try {
      const requests = recordRequests(page);
      const dialog = await askToReset(page);
      // The first step offered the action marked as needing confirmation.
      const descriptor = requests[0].catalog.frontendTools.find((t) => t.canonicalId === RESET);
      assert.ok(descriptor, "resetView is offered on the All invoices screen");
      assert.match(descriptor.description, /requires confirmation/);
      assert.deepEqual(descriptor.inputSchema, { type: "object", properties: {}, additionalProperties: false });
      // Nothing changes while the dialog waits.
      assert.match(page.url(), /[?&]q=aurora/);

      await dialog.getByRole("button", { name: "Allow" }).click();
      await dialog.waitFor({ state: "detached" });
      await page.waitForURL((url) => url.pathname === "/receivables/all" && url.search === "");
      await waitForCount(page, ALL_ROWS, 24);
      assert.equal(await page.getByLabel("Filter by Status").inputValue(), "");
      assert.equal(await page.getByRole("searchbox").inputValue(), "");
      assert.deepEqual(await headers(page), ["Invoice", "Client", "Segment", "Status", "Amount", "Issued", "Due"]);
      // Back to the default sort: due date, latest first.
      assert.equal(await page.locator('table[aria-label="All invoices"] th[aria-sort="descending"]').innerText(), "Due ▼");

      await waitForTurnEnd(page, 1);
      await waitForText(page, "The reset request has an answer.");
      const reset = await resultOf(page);
      const className = await reset.getAttribute("class");
      assert.ok(className.includes("state-done"), `${className}: ${await reset.textContent()}`);
      assert.ok(!(await reset.textContent()).includes("CONFIRMATION_INVALID"));
      assert.equal(requests.length, 2);
      assert.ok(!JSON.stringify(requests[1]).includes("CONFIRMATION_INVALID"));
      assert.equal(await page.getByRole("alertdialog").count(), 0);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  const DENIALS = [
    [
      "denying the confirmation changes nothing and answers the model with the typed denial",
      (page, dialog) => dialog.getByRole("button", { name: "Deny" }).click(),
    ],
    ["dismissing the confirmation with Escape is a denial", (page) => page.keyboard.press("Escape")],
  ];
  for (const [name, dismiss] of DENIALS) {
    test(name, async () => {
      const { context, page } = await openNarrowed();
      try {
        const requests = recordRequests(page);
        const dialog = await askToReset(page);
        await dismiss(page, dialog);
        await dialog.waitFor({ state: "detached" });
        await assertDenied(page, requests);
      } finally {
        await context.close();
      }
    });
  }

  test("the toolbar's Reset view button does the same without asking", async () => {
    const { context, page } = await openNarrowed();
    try {
      await page.getByRole("toolbar", { name: "All invoices filters" }).getByRole("button", { name: "Reset view" }).click();
      await page.waitForURL((url) => url.pathname === "/receivables/all" && url.search === "");
      await waitForCount(page, ALL_ROWS, 24);
      assert.equal(await page.getByLabel("Filter by Status").inputValue(), "");
      assert.deepEqual(await headers(page), ["Invoice", "Client", "Segment", "Status", "Amount", "Issued", "Due"]);
      assert.equal(await page.getByRole("alertdialog").count(), 0);
    } finally {
      await context.close();
    }
  });
});
