// One host-server --demo process per test file, on a port the OS picks, plus the app's own
// sign-in (the cookie a browser would hold). The clients under test are the ecosystem's own.
import { spawn } from "node:child_process";
import { after, before } from "node:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = process.env.HOST_SERVER_BIN ?? join(ROOT, "target/debug/host-server");

/** Resolves `{url, stop}` once the server's startup line names its address. */
export function startServer(extraArgs = []) {
  const args = ["--demo", "--database", "sqlite::memory:", "--listen", "127.0.0.1:0", ...extraArgs];
  const child = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, RUST_LOG: "warn" } });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolveStart, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match) {
        const stop = () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          });
        resolveStart({ url: match[1], stop });
      }
    });
    child.once("exit", (code) => reject(new Error(`host-server exited (${code}) before listening:\n${stderr}`)));
  });
}

/** A server whose model plays `script` (`--model scripted:<file>`), and a controller's cookie;
 *  `stop` also removes the script. */
export async function startScripted(script, extraArgs = []) {
  const dir = mkdtempSync(join(tmpdir(), "dpas-interop-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const server = await startServer(["--model", `scripted:${file}`, ...extraArgs]);
  const cookie = await signIn(server.url, "controller");
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: server.url, cookie, stop };
}

/** For a test file: a scripted server started before its tests and stopped after them; the
 *  returned object gets `url` and `cookie` once started. */
export function scriptedServer(script) {
  const handle = {};
  before(async () => Object.assign(handle, await startScripted(script)));
  after(() => handle.stop?.());
  return handle;
}

/** Signs in as a demo role the way the app does; the `Cookie` header value to send back. */
export async function signIn(base, role) {
  const res = await fetch(`${base}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role }),
  });
  if (res.status !== 200) throw new Error(`sign-in as ${role}: ${res.status} ${await res.text()}`);
  return res.headers.get("set-cookie").split(";")[0];
}

/** A JSON request with the session cookie; `{status, body}`. */
export async function call(base, cookie, method, path, body) {
  const init = { method, headers: { cookie } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** For a browser test file: bundles `entry` (a React page, esbuild) into a temporary site,
 *  serves it from a scripted server (`--static`) and launches Debian's headless Chromium;
 *  the returned object gets `server` and `browser` once started, and all is removed after. */
export function servedPage(entry, script) {
  const handle = {};
  let site;
  before(async () => {
    const { build } = await import("esbuild");
    const { chromium } = await import("playwright-core");
    site = mkdtempSync(join(tmpdir(), "dpas-page-"));
    await build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      jsx: "automatic",
      outfile: join(site, "app.js"),
      define: { "process.env.NODE_ENV": '"production"' },
      logLevel: "error",
    });
    writeFileSync(join(site, "index.html"), '<!doctype html><div id="root"></div><script type="module" src="/app.js"></script>');
    handle.server = await startScripted(script, ["--static", site]);
    handle.browser = await chromium.launch({
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    });
  });
  after(async () => {
    await handle.browser?.close();
    await handle.server?.stop();
    if (site) rmSync(site, { recursive: true, force: true });
  });
  return handle;
}
