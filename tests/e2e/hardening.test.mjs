// Hardening findings reproduced in real Chromium: a page on another port of the same host
// (same site, so the SameSite=Lax cookie goes along) must not write into the signed-in
// user's ledger, and the app runs under its Content-Security-Policy without violations.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openApp, PENDING_ROWS, startServer, waitForCount } from "./harness.mjs";

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

/** A page on its own 127.0.0.1 port that posts to `target` the ways a cross-site page can
 *  without a CORS preflight, then sets `window.done`. */
function attackerSite(target) {
  const html = `<!doctype html><title>elsewhere</title><script>
    const body = JSON.stringify({ clientId: 3, amount: 4200 });
    Promise.allSettled([
      fetch(${JSON.stringify(target)} + "/rpc/create-invoice", { method: "POST", mode: "no-cors",
        credentials: "include", headers: { "content-type": "text/plain" }, body }),
      fetch(${JSON.stringify(target)} + "/api/demo/reset", { method: "POST", mode: "no-cors",
        credentials: "include" }),
    ]).then(() => { window.done = true; });
  </script>`;
  const site = createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(html);
  });
  return new Promise((resolve) => {
    site.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${site.address().port}`, close: () => site.close() }));
  });
}

describe("hardening", () => {
  test("a page on another port of the same host cannot write with the user's cookie", async () => {
    const { context } = await openApp(browser, base, { role: "controller" });
    const attacker = await attackerSite(base);
    try {
      const count = async () =>
        (await (await context.request.post("/rpc/list-invoices", { data: { kind: "all" } })).json()).data.length;
      const created = await context.request.post("/rpc/create-invoice", { data: { clientId: 3, amount: 100 } });
      assert.equal(created.status(), 200, "the user's own writes work");
      const before = await count();
      const page = await context.newPage();
      await page.goto(attacker.url);
      await page.waitForFunction(() => window.done === true);
      assert.equal(await count(), before, "no invoice created, and the ledger was not reset");
    } finally {
      attacker.close();
      await context.close();
    }
  });

  test("the app runs under its Content-Security-Policy without a violation", async () => {
    const { context, page } = await openApp(browser, base, {
      beforeLoad: (p) =>
        p.addInitScript(() => {
          window.__csp = [];
          document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
        }),
    });
    try {
      await waitForCount(page, PENDING_ROWS, 13);
      await page.getByRole("link", { name: "Clients" }).first().click();
      await page.getByRole("heading", { name: "Clients" }).waitFor();
      const response = await context.request.get("/");
      assert.match(response.headers()["content-security-policy"], /frame-ancestors 'none'/);
      assert.deepEqual(await page.evaluate(() => window.__csp), []);
    } finally {
      await context.close();
    }
  });
});
