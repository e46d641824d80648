// Shared set-up for the browser suite: host-server processes (the demo server that
// scripts/e2e.sh started, or one started here), Debian's Chromium through playwright-core,
// and a few auto-waiting assertions (playwright-core has no `expect`).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const ARTIFACTS = join(ROOT, "tests/e2e/artifacts");
const BIN = process.env.HOST_SERVER_BIN ?? join(ROOT, "target/debug/host-server");
const STATIC = process.env.WWW_DIST ?? join(ROOT, "www/dist");
const TIMEOUT = 20_000;

/** Starts host-server on a port the OS picks; resolves once its startup line names it. */
export function startServer({ model } = {}) {
  const args = ["--demo", "--static", STATIC, "--database", "sqlite::memory:", "--listen", "127.0.0.1:0"];
  if (model) args.push("--model", model);
  const child = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, RUST_LOG: "warn" } });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolvePromise, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match) {
        resolvePromise({
          url: match[1],
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once("exit", () => done());
              child.kill("SIGTERM");
            }),
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`host-server exited (${code}) before listening:\n${stderr}`)));
  });
}

/** A rules script for `--model scripted:<file>`, written to a temporary file. */
export function writeScript(script) {
  const dir = mkdtempSync(join(tmpdir(), "dpas-script-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script, null, 2));
  return { file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A suite's browser and server on a rules script (`writeScript`), started before its tests
 *  and stopped after them: read `browser` and `server` inside a test. */
export function scriptedSuite(rules, { before, after }) {
  const suite = { browser: null, server: null };
  let script;
  before(async () => {
    suite.browser = await launchBrowser();
    script = writeScript(rules);
    suite.server = await startServer({ model: `scripted:${script.file}` });
  });
  after(async () => {
    await suite.browser?.close();
    await suite.server?.stop();
    script?.cleanup();
  });
  return suite;
}

/** Debian's Chromium, headless, with a fresh profile per launch (playwright-core creates
 *  and removes a temporary user-data directory for every launched browser); `args` adds
 *  switches (e.g. a feature flag). */
export function launchBrowser({ args = [] } = {}) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      ...args,
    ],
  });
}

/** A fresh context (own cookies and storage) on `base`, with the ledger re-seeded and, when
 *  asked, a role signed in. Browser console errors are collected in `errors`. */
export async function openApp(browser, base, { role, path = "/receivables/pending", beforeLoad } = {}) {
  const context = await browser.newContext({ baseURL: base, viewport: { width: 1440, height: 900 } });
  context.setDefaultTimeout(TIMEOUT);
  const reset = await context.request.post("/api/demo/reset", { failOnStatusCode: false });
  if (reset.status() === 401) {
    await signInAs(context, "controller");
    await context.request.post("/api/demo/reset", { failOnStatusCode: true });
  }
  if (role) await signInAs(context, role);
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const hooked = beforeLoad ? await beforeLoad(page) : undefined;
  await page.goto(path);
  await page.getByRole("heading", { name: headingFor(path) }).waitFor();
  return { context, page, errors, hooked };
}

/** Another tab of `context` (its cookies and storage: same origin, same session) on `path`. */
export async function openTab(context, path = "/receivables/pending") {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(path);
  await page.getByRole("heading", { name: headingFor(path) }).waitFor();
  return { page, errors };
}

/** Waits until the page's dock says this tab's role (`executor` or `follower`). */
export async function waitForTabRole(page, role) {
  await page.locator(`.dock[data-tab-role="${role}"]`).waitFor();
}

function headingFor(path) {
  if (path.startsWith("/receivables/all")) return "All invoices";
  if (path.startsWith("/receivables/clients")) return "Clients";
  if (path.startsWith("/architecture")) return "How this works";
  return "Pending invoices";
}

export async function signInAs(context, role) {
  await context.request.post("/api/session", { data: { role }, failOnStatusCode: true });
}

export const PENDING_ROWS = 'table[aria-label="Pending invoices"] [data-invoice-row]';

/** Waits until `selector` matches exactly `n` elements. */
export async function waitForCount(page, selector, n, timeout = TIMEOUT) {
  await page
    .waitForFunction(([s, count]) => document.querySelectorAll(s).length === count, [selector, n], { timeout })
    .catch(async (e) => {
      const found = await page.locator(selector).count();
      throw new Error(`expected ${n} × ${selector}, found ${found}: ${e.message}`);
    });
}

/** Waits until the page's whole text (including closed disclosures) contains `needle`; on a
 *  timeout the error quotes the assistant's last message, which usually says what went wrong. */
export async function waitForText(page, needle, timeout = TIMEOUT) {
  await page.waitForFunction((n) => document.body.textContent.includes(n), needle, { timeout }).catch(async (e) => {
    const last = await page
      .locator(".msg.assistant")
      .last()
      .textContent({ timeout: 1000 })
      .catch(() => "(no assistant message)");
    throw new Error(`waiting for ${JSON.stringify(needle)}; the last assistant message: ${JSON.stringify(last)}: ${e.message}`);
  });
}

export function pageText(page) {
  return page.evaluate(() => document.body.textContent);
}

/** Keeps a copy of every /agent/chat response body the page reads (the page's own fetch,
 *  teed), so a test can read the NDJSON frames afterwards; install before navigating.
 *  `all()` resolves with the frames of the current page load. */
export async function recordFrames(page) {
  await page.addInitScript(() => {
    const original = window.fetch.bind(window);
    window.__chatBodies = [];
    window.fetch = async (input, init) => {
      const response = await original(input, init);
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (new URL(url, location.href).pathname === "/agent/chat") window.__chatBodies.push(response.clone().text());
      return response;
    };
  });
  return {
    all: async () => {
      const bodies = await page.evaluate(() => Promise.all(window.__chatBodies));
      return bodies.flatMap((body) =>
        body
          .split("\n")
          .filter((line) => line.trim())
          .map((line) => JSON.parse(line)),
      );
    },
  };
}

/** The JSON bodies of every /agent/chat request the page sends, in order. */
export function recordRequests(page) {
  const bodies = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname === "/agent/chat") {
      bodies.push(JSON.parse(request.postData() ?? "null"));
    }
  });
  return bodies;
}

/** Waits until the turn that is running (or about to start) has ended. */
export async function waitForTurnEnd(page, userMessages, timeout = TIMEOUT) {
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll(".msg.user").length >= n &&
      document.querySelector('.dock[aria-busy="false"]') !== null,
    userMessages,
    { timeout },
  );
}

/** Sends a message through the composer and waits for the turn to end. */
export async function sendMessage(page, text) {
  const before = await page.locator(".msg.user").count();
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send" }).click();
  await waitForTurnEnd(page, before + 1);
}

export function artifactPath(name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name);
}
