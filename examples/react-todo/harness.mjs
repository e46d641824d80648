// What the browser tests of this app share (this folder's, on todo-server, and
// examples/todo-backend's, on host-server): a server binary started on a port it picks, and a
// Chromium page that collects its errors and the refusals it got.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Starts `bin args`; resolves to its URL once it prints `listening on http://127.0.0.1:N`. */
export async function startServer(bin, args, env = process.env) {
  const name = bin.split("/").at(-1);
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], env });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const url = await new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}):\n${stderr}`)));
    createInterface({ input: child.stdout }).once("line", (line) => {
      const found = /^listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
      if (found) resolve(found[1]);
      else reject(new Error(`${name} said ${JSON.stringify(line)}:\n${stderr}`));
    });
  });
  return { url, stop: () => child.kill() };
}

/** A new page of `browser` (in a context of its own) or of a context; `errors` gathers its
 *  exceptions and console errors, `refused` its 4xx/5xx answers. */
export async function openPage(browser) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") && errors.push(m.text()));
  const refused = [];
  page.on("response", (r) => r.status() >= 400 && refused.push(`${r.status()} ${new URL(r.url()).pathname}`));
  return { page, errors, refused };
}

/** The chat's tool cards in the order shown, as `canonical id: state`. */
export function toolCards(page) {
  return page.locator("[data-tool-card]").evaluateAll((cards) => cards.map((c) => `${c.dataset.toolCard}: ${c.dataset.state}`));
}
