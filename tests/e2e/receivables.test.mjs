// The receivables screens against the real server and the real build (demo README §g).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { artifactPath, launchBrowser, openApp, PENDING_ROWS, signInAs, startServer, waitForCount, waitForText } from "./harness.mjs";

let server;
let browser;
let base;

before(async () => {
  if (process.env.E2E_BASE_URL) base = process.env.E2E_BASE_URL;
  else {
    server = await startServer();
    base = server.url;
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

describe("pending invoices", () => {
  test("signs in as a controller, shows the KPIs and the 13 pending rows", async () => {
    const { context, page, errors } = await openApp(browser, base);
    try {
      await page.getByRole("group", { name: "Outstanding" }).getByText("€200,500").waitFor();
      await page.getByRole("group", { name: "Overdue" }).getByText("€102,600").waitFor();
      await page.getByRole("group", { name: "Overdue" }).getByText("7 invoices").waitFor();
      await page.getByRole("group", { name: "Collected (30d)" }).getByText("€3,250").waitFor();
      await page.getByRole("group", { name: "Avg days to pay" }).getByText("0 over 90 days").waitFor();
      await waitForCount(page, PENDING_ROWS, 13);
      const session = await (await context.request.get("/api/session")).json();
      assert.equal(session.user.role, "controller");
      assert.equal(await page.title(), "Pending invoices — Receivables");
      const firstRefs = await page.locator(`${PENDING_ROWS} td:nth-child(2)`).allTextContents();
      assert.deepEqual(firstRefs.slice(0, 3), ["DUN-0037", "EVL-0084", "AUR-0134"]);

      // The dock can be put away and brought back, and remembers which across a reload.
      await page.getByRole("region", { name: "Copilot" }).waitFor();
      await page.getByRole("button", { name: "Hide copilot" }).click();
      await page.getByRole("region", { name: "Copilot" }).waitFor({ state: "detached" });
      await page.reload();
      await page.getByRole("button", { name: "Open copilot" }).click();
      await page.getByRole("textbox", { name: "Message" }).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test("the due filter narrows to 7 rows, lives in the URL and survives a reload", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByLabel("Filter by due status").selectOption({ label: "Overdue only" });
      await waitForCount(page, PENDING_ROWS, 7);
      assert.match(page.url(), /[?&]due=overdue(&|$)/);
      await page.reload();
      await waitForCount(page, PENDING_ROWS, 7);
      await page.getByLabel("Filter by due status").selectOption({ label: "Not yet due" });
      await waitForCount(page, PENDING_ROWS, 6);
      assert.match(page.url(), /due=current/);
      await page.getByLabel("Filter by due status").selectOption({ label: "All pending" });
      await waitForCount(page, PENDING_ROWS, 13);
      assert.doesNotMatch(page.url(), /due=/);
    } finally {
      await context.close();
    }
  });

  test("sorting by amount is numeric and written to the URL; a third click removes it", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      const amount = page.getByRole("button", { name: "Amount", exact: true });
      await amount.click();
      await page.waitForURL(/sort=amount\.asc/);
      await page.locator(PENDING_ROWS).first().getByText("€6,150").waitFor();
      await amount.click();
      await page.waitForURL(/sort=amount\.desc/);
      await page.locator(PENDING_ROWS).first().getByText("€31,500").waitFor();
      await amount.click();
      await page.waitForURL(/sort=none/);
      await page.reload();
      await waitForCount(page, PENDING_ROWS, 13);
      assert.equal(
        await page.getByRole("columnheader", { name: "Amount" }).getAttribute("aria-sort"),
        null,
      );
    } finally {
      await context.close();
    }
  });

  test("column visibility and order are kept in the URL", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByText("Columns", { exact: true }).click();
      await page.getByRole("checkbox", { name: "Show Segment" }).click();
      await page.waitForURL(/cols=/);
      await page.getByRole("columnheader", { name: "Segment" }).waitFor({ state: "detached" });
      // Amount moves past Segment (hidden) and then past Client.
      await page.getByRole("button", { name: "Move Amount left" }).click();
      await page.waitForURL(/cols=client_name%2Camount%2C-segment|cols=client_name,amount,-segment/);
      await page.getByRole("button", { name: "Move Amount left" }).click();
      await page.waitForURL(/cols=amount%2Cclient_name|cols=amount,client_name/);
      await page.reload();
      await waitForCount(page, PENDING_ROWS, 13);
      const headers = (await page.getByRole("columnheader").allTextContents()).map((h) => h.trim()).filter(Boolean);
      assert.deepEqual(headers.slice(0, 4), ["Invoice", "Amount", "Client", "Due"]);
      assert.ok(!headers.includes("Segment"));
    } finally {
      await context.close();
    }
  });

  test("the chase dialog records a reminder that is there after a reload", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.locator(PENDING_ROWS).first().getByRole("button", { name: "Chase" }).click();
      const dialog = page.getByRole("dialog", { name: "Chase DUN-0037" });
      await dialog.waitFor();
      assert.match(page.url(), /chase=\d+/);
      await dialog.getByLabel("Note").fill("Promised payment on Friday.");
      await dialog.getByRole("button", { name: "Record reminder" }).click();
      await dialog.waitFor({ state: "detached" });
      assert.doesNotMatch(page.url(), /chase=/);
      await page.reload();
      await waitForCount(page, PENDING_ROWS, 13);
      await page.locator(PENDING_ROWS).first().getByRole("button", { name: "Chase" }).click();
      await page.getByRole("dialog", { name: "Chase DUN-0037" }).getByText("Promised payment on Friday.").waitFor();
      const stored = await (
        await context.request.post("/rpc/list-invoices", { data: { kind: "pending" } })
      ).json();
      const row = stored.data.find((r) => r.reference === "DUN-0037");
      assert.equal(row.collection.note, "Promised payment on Friday.");
    } finally {
      await context.close();
    }
  });

  test("all invoices and clients", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await page.getByRole("link", { name: "All invoices" }).click();
      await page.getByRole("heading", { name: "All invoices" }).waitFor();
      await waitForCount(page, '[aria-label="All invoices"] [data-invoice-row]', 24);
      await page.getByLabel("Filter by Status").selectOption("draft");
      await waitForCount(page, '[aria-label="All invoices"] [data-invoice-row]', 5);
      await page.getByRole("link", { name: "Clients" }).click();
      await page.getByRole("heading", { name: "Clients" }).waitFor();
      await waitForCount(page, "[data-client-row]", 5);
      const names = await page.locator("[data-client-row] td:first-child").allTextContents();
      assert.deepEqual(names, [
        "Aurora Labs",
        "Dunmore Civic Trust",
        "Cobalt Logistics",
        "Everline Health",
        "Bellweather Foods",
      ]);
      await page.getByLabel("Search clients").fill("cobalt");
      await waitForCount(page, "[data-client-row]", 1);
      assert.match(page.url(), /q=cobalt/);
      await page.getByRole("link", { name: "How this works" }).click();
      await page.getByRole("heading", { name: "How this works" }).waitFor();
      await page.goto("/");
      await page.waitForURL(/\/receivables\/pending$/);
    } finally {
      await context.close();
    }
  });

  test("record payment is offered to controllers only, and settles the selected invoice", async () => {
    const { context, page } = await openApp(browser, base);
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByRole("checkbox", { name: "Select DUN-0037" }).click();
      await page.waitForURL(/sel=\d+/);
      const record = page.getByRole("button", { name: "Record payment" });
      await record.waitFor();

      await signInAs(context, "analyst");
      await page.reload();
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByText("Ada Analyst").waitFor();
      await page.getByRole("checkbox", { name: "Select EVL-0084" }).click();
      await page.waitForURL(/sel=\d+,\d+/);
      assert.equal(await record.count(), 0);

      await page.getByLabel("Role").selectOption("controller");
      await page.getByText("Carla Controller").waitFor();
      await record.click();
      await waitForCount(page, PENDING_ROWS, 11);
      await page.getByRole("group", { name: "Outstanding" }).getByText("€165,950").waitFor();
      assert.doesNotMatch(page.url(), /sel=/);
    } finally {
      await context.close();
    }
  });
});

test("every page loads its own text", async () => {
  const { context, page } = await openApp(browser, base, { path: "/architecture" });
  try {
    await waitForText(page, "@dpas/host");
  } finally {
    await context.close();
  }
});

// The app's side of the MCP door: "Connect an MCP client" hands out a working bearer token,
// and the approval deep link an MCP client receives opens the request's card in the app,
// where a person approves it; the MCP client then runs it once with approvals_resume.
/** One JSON-RPC request to /mcp as the MCP client would send it, with the pasted header. */
async function mcp(request, authorization, method, params) {
  const res = await request.fetch(`${base}/mcp`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json", accept: "application/json, text/event-stream" },
    data: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    failOnStatusCode: true,
  });
  return (await res.json()).result;
}

describe("the MCP door", () => {
  test("connect an MCP client, follow its approval link, approve in the app, resume over MCP", async () => {
    const { context, page, errors } = await openApp(browser, base);
    try {
      await page.getByRole("button", { name: "Connect an MCP client" }).click();
      const dialog = page.getByRole("dialog", { name: "Connect an MCP client" });
      const header = dialog.getByRole("textbox", { name: "Authorization header" });
      await header.waitFor();
      assert.equal(await dialog.getByRole("textbox", { name: "MCP URL" }).inputValue(), `${base}/mcp`);
      const authorization = await header.inputValue();
      assert.match(authorization, /^Bearer \S+$/);
      await page.screenshot({ path: artifactPath("mcp-connect.png") });
      await dialog.getByRole("button", { name: "Close" }).click();

      // A separate client, holding only the pasted header (no cookie).
      const client = await (await import("playwright-core")).request.newContext();
      try {
        const drafts = await context.request.post("/rpc/list-invoices", { data: { kind: "draft" } });
        const draft = (await drafts.json()).data[0];
        const gated = await mcp(client, authorization, "tools/call", { name: "issue-invoice", arguments: { id: draft.id } });
        const { approvalId, approvalUrl } = gated.structuredContent;
        assert.equal(approvalUrl, `${base}/approvals/${approvalId}`);

        await page.goto(approvalUrl);
        const card = page.getByRole("group", { name: "Approval request" });
        await card.getByText("issue-invoice", { exact: true }).waitFor();
        await card.getByText("an MCP client").waitFor();
        assert.equal(await card.getByTestId("approval-status").textContent(), "pending");
        // What will be issued, as the server bound it.
        await card.getByTestId("approval-target").getByText(`${draft.reference} · `, { exact: false }).waitFor();
        await page.screenshot({ path: artifactPath("mcp-approval-card.png") });
        await card.getByRole("button", { name: "Approve" }).click();
        await waitForText(page, "The requesting MCP session can now run it.");

        const resumed = await mcp(client, authorization, "tools/call", { name: "approvals_resume", arguments: { approvalId } });
        assert.equal(resumed.structuredContent.status, "ok", JSON.stringify(resumed));
        assert.equal(resumed.structuredContent.data.status, "sent");

        await page.reload();
        await card.getByText("Approved by Carla Controller.").waitFor();
        assert.equal(await card.getByTestId("approval-status").textContent(), "consumed");
      } finally {
        await client.dispose();
      }

      // Someone else's (or an unknown) approval id shows nothing of it.
      await page.goto(`${base}/approvals/apr_unknown`);
      await waitForText(page, "No approval request of yours has this id.");
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
