// A step endpoint for the packaging fixtures: plays one todo turn as a model would, over the
// protocol's NDJSON frames, and serves a built app's files. Nothing here is @dpas/host's code.
//   POST /agent/chat   step 0: the model says `preamble` (when given) and calls
//                      view:todo.list.add {text:"milk"}; step 1: it answers with the
//                      browser's result in its text
//   GET  /*            files of `staticDir` (index.html for unknown paths)
// startStub({ staticDir?, input?, preamble? }) listens on 127.0.0.1 on a port the OS picks and
// resolves with its URL; `input` replaces the call's {text:"milk"}.
import http from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";

const line = (frame) => JSON.stringify(frame) + "\n";
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };
const ADD = { toolCallId: "call_add", wireName: "view_todo__list__add", canonicalId: "view:todo.list.add", input: { text: "milk" } };

function step(body, input, preamble) {
  const id = `stp_${body.stepIndex}`;
  const start = { type: "step-start", stepId: id, turnId: body.turnId, conversationId: body.conversationId, domainTools: [], scope: [] };
  const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15, reportedSteps: 1 };
  if (body.stepIndex === 0) {
    const add = { ...ADD, input };
    const call = { type: "tool-call", toolCallId: add.toolCallId, toolName: add.wireName, input };
    const said = preamble ? [{ type: "text", text: preamble }] : [];
    return [
      start,
      ...(preamble ? [{ type: "text-delta", text: preamble }] : []),
      { type: "tool-call", ...add, executor: "browser" },
      { type: "step-finish", stepId: id, finishReason: "tool-calls", responseMessages: [{ role: "assistant", content: [...said, call] }], pendingToolCalls: [add], usage },
    ];
  }
  const result = body.messages.filter((m) => m.role === "tool").flatMap((m) => m.content)[0];
  const text = `Added: ${JSON.stringify(result?.output?.value ?? null)}`;
  return [
    start,
    { type: "text-delta", text },
    { type: "step-finish", stepId: id, finishReason: "stop", responseMessages: [{ role: "assistant", content: [{ type: "text", text }] }], pendingToolCalls: [], usage },
  ];
}

export function startStub({ staticDir, input = ADD.input, preamble } = {}) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (req.method === "POST" && url.pathname === "/agent/chat") {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      const body = JSON.parse(raw);
      requests.push(body);
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      for (const frame of step(body, input, preamble)) res.write(line(frame));
      res.end();
      return;
    }
    if (req.method === "GET" && staticDir) {
      const path = normalize(url.pathname).replace(/^(\.\.[/\\])+/, "");
      const file = join(staticDir, path === "/" ? "index.html" : path);
      const body = await readFile(file).catch(() => readFile(join(staticDir, "index.html")));
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "text/html" });
      res.end(body);
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((done) => server.close(done)) });
    });
  });
}
