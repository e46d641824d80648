// A step whose connection drops mid-stream, in real Chromium against the real server: a proxy
// between the two cuts the first chat answer after its first frame; the package posts the same
// step again, the server answers it from its step record (the run still going: followed live),
// and the turn ends as if nothing had happened.
import assert from "node:assert/strict";
import { createServer, request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { launchBrowser, openApp, pageText, sendMessage, startServer, waitForText, writeScript } from "./harness.mjs";

const ANSWER = "The answer survived the dropped connection.";
const RULES = {
  turns: [
    // Slow enough that the re-post lands while the first run is still streaming.
    { when: { lastUserContains: "Answer slowly" }, delayMs: 1500, text: ["The answer survived ", "the dropped connection."] },
    { when: {}, text: ["Still here."] },
  ],
};

/** Forwards everything to `target`; cuts the first `/agent/chat` answer's connection once its
 *  first NDJSON line has gone through. Records each chat POST's body and replay header. */
function cuttingProxy(target) {
  const chats = [];
  const proxy = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const isChat = req.method === "POST" && req.url.split("?")[0] === "/agent/chat";
      const index = isChat ? chats.push({ body: body.toString("utf8"), replay: null }) - 1 : -1;
      const upstream = httpRequest(
        new URL(req.url, target),
        // Host passes unchanged, as from a reverse proxy: the server checks Origin against it.
        { method: req.method, headers: req.headers },
        (answer) => {
          if (isChat) chats[index].replay = answer.headers["dpas-step-replay"] ?? null;
          res.writeHead(answer.statusCode, answer.headers);
          let sent = "";
          answer.on("data", (chunk) => {
            res.write(chunk);
            sent += chunk.toString("utf8");
            if (index === 0 && sent.includes("\n")) {
              answer.destroy();
              res.socket.destroy();
            }
          });
          answer.on("end", () => res.end());
        },
      );
      upstream.on("error", () => res.socket?.destroy());
      upstream.end(body);
    });
  });
  return new Promise((resolve) => {
    proxy.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${proxy.address().port}`,
        chats,
        close: () =>
          new Promise((done) => {
            proxy.closeAllConnections();
            proxy.close(() => done());
          }),
      }),
    );
  });
}

let browser;
let server;
let script;
let proxy;

before(async () => {
  browser = await launchBrowser();
  script = writeScript(RULES);
  server = await startServer({ model: `scripted:${script.file}` });
  proxy = await cuttingProxy(server.url);
});

after(async () => {
  await browser?.close();
  await proxy?.close();
  await server?.stop();
  script?.cleanup();
});

describe("a dropped step", () => {
  test("a step whose connection drops is re-posted and the turn completes", async () => {
    const { context, page, errors } = await openApp(browser, proxy.url, { role: "controller" });
    try {
      await sendMessage(page, "Answer slowly, please.");
      await waitForText(page, ANSWER);
      assert.equal(proxy.chats.length, 2, "the step was posted twice: the cut one and its retry");
      assert.equal(proxy.chats[1].body, proxy.chats[0].body, "the retry is the same request");
      assert.equal(proxy.chats[0].replay, null, "the first post ran the step");
      assert.equal(proxy.chats[1].replay, "true", "the retry was answered from the step record");
      const text = await pageText(page);
      assert.equal(text.split(ANSWER).length - 1, 1, "the answer is shown once, not twice");
      assert.ok(!text.includes("interrupted"), "no error is shown");
      assert.deepEqual(errors ?? [], []);
    } finally {
      await context.close();
    }
  });
});
