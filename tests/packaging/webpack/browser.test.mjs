// The webpack build in Debian's headless Chromium: the wasm asset webpack emitted loads, the
// provider creates the Surface and the component registers.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startStub } from "../stub-server.mjs";

const dist = fileURLToPath(new URL("./dist", import.meta.url));

test("webpack emitted the package's wasm as an asset and took the browser entry", async () => {
  const files = await readdir(dist);
  const wasm = files.filter((f) => f.endsWith(".wasm"));
  assert.equal(wasm.length, 1, `one wasm asset in ${files}`);
  const shipped = await readFile(new URL("./node_modules/@dpas/host/dpas_host_bg.wasm", import.meta.url));
  assert.ok(shipped.equals(await readFile(`${dist}/${wasm[0]}`)));
  assert.ok(!(await readFile(`${dist}/main.js`, "utf8")).includes("node:fs"));
});

test("the webpack build initialises and registers in Chromium", async () => {
  const stub = await startStub({ staticDir: dist });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(stub.url);
    const status = page.getByTestId("status");
    await status.waitFor();
    assert.match(await status.textContent(), /^count 0, surface version [1-9]/);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await stub.close();
  }
});
