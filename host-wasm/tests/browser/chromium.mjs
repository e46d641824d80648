// Headless Chromium for the node-driven browser tests and benchmarks: Debian's build (or
// $CHROMIUM) through playwright-core, which is installed with the build tools
// (host-wasm/tools); `npx playwright install` cannot work on this machine.
import { createRequire } from "node:module";

const require = createRequire(new URL("../../tools/package.json", import.meta.url));
const { chromium } = require("playwright-core");

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

// runInPage(url, name) → what `window[name]()` resolves to on the golden page at `url`
// (/receivables/pending), and the page errors seen meanwhile.
export async function runInPage(url, name) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${url}/receivables/pending`);
    await page.waitForFunction((n) => typeof window[n] === "function", name);
    const result = await page.evaluate((n) => window[n](), name);
    return { result, errors };
  } finally {
    await browser.close();
  }
}
