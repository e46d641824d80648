// The WebMCP door in real Chromium: the demo turns it on, and the browser's own
// `document.modelContext` (Chromium's WebMCP, enabled by its feature flag) lists and calls what
// the page registered. What is registered must be what a step on the page would offer (the
// route's scope, available capabilities only); a call runs through the registry; a
// confirmation-required action asks the user through the demo's dialog. A second test puts a
// stand-in on the older `navigator.modelContext` alias and checks the unregistering.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openApp, PENDING_ROWS, startServer, waitForCount } from "./harness.mjs";

let server;
let base;
let browser;

before(async () => {
  if (process.env.E2E_BASE_URL) base = process.env.E2E_BASE_URL;
  else {
    server = await startServer();
    base = server.url;
  }
  browser = await launchBrowser({ args: ["--enable-features=WebMCP"] });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The page's WebMCP tools as an agent reads them: name → read-only and untrusted hints. */
async function registered(page) {
  return page.evaluate(async () => {
    const tools = await document.modelContext.getTools();
    return Object.fromEntries(
      tools.map((t) => [t.name, { readOnly: t.annotations?.readOnlyHint ?? false, description: t.description }]),
    );
  });
}

/** Waits until every name in `present` is registered and none in `absent` is (the page's CSP
 *  allows no evaluated strings, so the condition is data). */
async function waitForTools(page, { present = [], absent = [] }) {
  await page
    .waitForFunction(
      async ([yes, no]) => {
        const names = (await document.modelContext.getTools()).map((t) => t.name);
        return yes.every((n) => names.includes(n)) && !no.some((n) => names.includes(n));
      },
      [present, absent],
      { timeout: 10_000 },
    )
    .catch(async (e) => {
      throw new Error(`waiting for WebMCP tools ${JSON.stringify({ present, absent })}; registered: ${Object.keys(await registered(page))}: ${e.message}`);
    });
}

/** Calls a tool as an agent does; resolves with what it answered ({content, isError}). */
function call(page, name, input) {
  return page.evaluate(
    async ([n, i]) => {
      const tool = (await document.modelContext.getTools()).find((t) => t.name === n);
      if (!tool) throw new Error(`no tool ${n}`);
      const answer = await document.modelContext.executeTool(tool, i);
      return typeof answer === "string" ? JSON.parse(answer) : answer;
    },
    [name, input],
  );
}

const resultOf = (answer) => ({ isError: answer.isError, value: JSON.parse(answer.content[0].text) });

describe("the WebMCP door", () => {
  test("registers what a step would offer, runs calls through the registry, asks before a confirmed action", async () => {
    const { context, page, errors } = await openApp(browser, base, { role: "controller" });
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await waitForTools(page, { present: ["view_invoices__pending__setFilters"] });
      const tools = await registered(page);
      // The pending screen's scope: its table and the shell's tools, nothing of another route.
      assert.ok(tools["view_invoices__pending__readState"].readOnly, "an observation is read-only");
      assert.equal(tools["view_invoices__pending__setFilters"].readOnly, false, "an action is not");
      assert.ok(tools["view_app__navigation__goTo"]);
      assert.ok(!Object.keys(tools).some((n) => n.startsWith("view_invoices__all__")), "another route's tools are not offered");
      // Unavailable until a row's chase dialog is open: not registered.
      assert.ok(!("domain_update-collection-status" in tools), "an unavailable capability is not registered");

      // A call acts on the page as a turn's call would.
      const narrowed = resultOf(await call(page, "view_invoices__pending__setFilters", { due: "overdue" }));
      assert.equal(narrowed.isError, false, JSON.stringify(narrowed.value));
      await waitForCount(page, PENDING_ROWS, 7);
      const invalid = resultOf(await call(page, "view_invoices__pending__setFilters", { due: 42 }));
      assert.equal(invalid.isError, true);
      assert.equal(invalid.value.error.code, "INVALID_INPUT");

      // Another screen: its tools replace the first one's.
      await page.getByRole("link", { name: "All invoices" }).click();
      await page.getByRole("heading", { name: "All invoices" }).waitFor();
      await waitForTools(page, {
        present: ["view_invoices__all__resetView"],
        absent: ["view_invoices__pending__setFilters"],
      });

      // A confirmation-required action asks through the app's dialog: denied, then allowed.
      const denied = call(page, "view_invoices__all__resetView", {});
      const dialog = page.getByRole("alertdialog", { name: "Allow this action?" });
      await dialog.waitFor();
      await dialog.getByRole("button", { name: "Deny" }).click();
      const refusal = resultOf(await denied);
      assert.equal(refusal.isError, true);
      assert.equal(refusal.value.error.code, "CONFIRMATION_INVALID");
      const allowed = call(page, "view_invoices__all__resetView", {});
      await dialog.waitFor();
      await dialog.getByText("view:invoices.all.resetView").waitFor();
      await dialog.getByRole("button", { name: "Allow" }).click();
      assert.equal(resultOf(await allowed).isError, false);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test("the older navigator.modelContext alias: registered by name, unregistered by name", async () => {
    const { context, page } = await openApp(browser, base, {
      role: "controller",
      beforeLoad: (p) =>
        p.addInitScript(() => {
          // No document.modelContext: the stand-in on the alias is the only WebMCP entry.
          Object.defineProperty(Document.prototype, "modelContext", { value: undefined, configurable: true });
          const live = new Set();
          window.__webmcp = { live, log: [] };
          Object.defineProperty(Navigator.prototype, "modelContext", {
            configurable: true,
            value: {
              registerTool(tool) {
                if (live.has(tool.name)) throw new DOMException(`${tool.name} is registered`, "InvalidStateError");
                live.add(tool.name);
                window.__webmcp.log.push(["register", tool.name, tool.annotations]);
              },
              unregisterTool(name) {
                live.delete(name);
                window.__webmcp.log.push(["unregister", name]);
              },
            },
          });
        }),
    });
    try {
      await page.waitForFunction(() => window.__webmcp.live.has("view_invoices__pending__setFilters"));
      const first = await page.evaluate(() => window.__webmcp.log.filter((e) => e[0] === "register"));
      const readState = first.find((e) => e[1] === "view_invoices__pending__readState");
      assert.deepEqual(readState[2], { readOnlyHint: true, untrustedContentHint: false });
      await page.getByRole("link", { name: "All invoices" }).click();
      await page.waitForFunction(() => !window.__webmcp.live.has("view_invoices__pending__setFilters"));
      const log = await page.evaluate(() => window.__webmcp.log);
      assert.ok(log.some((e) => e[0] === "unregister" && e[1] === "view_invoices__pending__setFilters"));
      assert.ok(log.filter((e) => e[0] === "register" && e[1] === "view_app__navigation__goTo").length === 1,
        "a tool both screens offer stays registered");
    } finally {
      await context.close();
    }
  });
});
