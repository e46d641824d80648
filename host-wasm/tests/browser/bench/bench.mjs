// Drives bench.js in headless Chromium (Debian's, through playwright-core) and prints its
// figures. Serves the page and the package (PKG_DIR, default host-wasm/pkg) itself on a free
// 127.0.0.1 port. The recorded step is the reference trace browser-carla-step0 from
// fixtures/reference-traces/.
// Printed only, never asserted: scripts/bench-browser.sh runs it, CI does not.
import http from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../chromium.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../../..");

const pkg = path.resolve(process.env.PKG_DIR ?? path.join(root, "host-wasm/pkg"));
const runs = Number(process.env.BENCH_RUNS ?? 50);
const recorded = await readFile(path.join(root, "fixtures/reference-traces/browser-carla-step0.response.txt"), "utf8");
const trace = recorded.slice(recorded.indexOf("\n\n") + 2);

const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  const file = url.pathname.startsWith("/pkg/")
    ? path.join(pkg, url.pathname.slice(5))
    : path.join(here, url.pathname === "/" ? "index.html" : url.pathname.slice(1));
  if (!file.startsWith(pkg) && !file.startsWith(here)) return res.writeHead(404).end();
  try {
    const body = await readFile(file);
    // Cross-origin isolated, so performance.now() has its fine resolution (5 µs, not 100 µs).
    res.writeHead(200, {
      "content-type": types[path.extname(file)] ?? "application/octet-stream",
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
    }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.benchReady === true);
  const result = await page.evaluate(([t, n]) => window.runBench(t, n), [trace, runs]);
  if (errors.length) throw new Error(errors.join("\n"));
  const ms = (s) => `${s.median.toFixed(3)} ms (p90 ${s.p90.toFixed(3)})`;
  const isolated = await page.evaluate(() => crossOriginIsolated);
  console.log(`@dpas/host in Chromium ${browser.version()} (timer ${isolated ? "fine" : "coarse, 100 µs"}), ${runs} runs each:`);
  for (const n of [16, 128]) {
    const s = result.steps[n];
    console.log(`  ${String(n).padStart(3)} capabilities, request ${s.requestBytes} B`);
    console.log(`      step-finish → next request, an observation read: ${ms(s.read)}`);
    console.log(`      step-finish → next request, a local-state action (+ settle-wait): ${ms(s.action)}`);
    console.log(`      settle-wait of a quiet UI, timed inside the turn: ${ms(s.settle)}, ${s.settle.ticks} task yields`);
    console.log(`      (action − read, medians: ${(s.action.median - s.read.median).toFixed(3)} ms)`);
    console.log(`      peer, plain JS JSON.parse + JSON.stringify of that request: ${ms(s.peerJson)}`);
  }
  const d = result.decode;
  console.log(`  decoding a recorded step (${d.frames} frames, ${d.bytes} B): ${ms(d.host)}`);
  console.log(`      peer, plain JS split + JSON.parse of the same lines: ${ms(d.peerJson)}`);
  console.log("  targets (issue 16): ≤ 1 ms per step at 128 capabilities, settle ≤ 2 ms when quiet");
} finally {
  await browser.close();
  server.close();
}
