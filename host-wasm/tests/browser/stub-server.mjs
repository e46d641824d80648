// A scripted step endpoint for the wasm-bindgen browser tests (tests/web.rs): NDJSON frames
// written as the test needs them, CORS with credentials for the test runner's origin.
//   POST /chat/<scenario>   a step request; answered per scenario and stepIndex
//   POST /release/<key>     lets a held stream ("hold") finish
//   GET  /requests/<key>    the step requests received for a key, as a JSON array
//   GET  /login             sets a session cookie (to check `credentials: "include"`)
// Prints "listening on http://127.0.0.1:PORT" once bound (port 0: the OS picks).
import http from "node:http";

const requests = new Map(); // key → bodies
const held = new Map(); // key → resume()
const released = new Set();

const line = (frame) => JSON.stringify(frame) + "\n";
const start = (body) => ({
  type: "step-start", stepId: `stp_${body.stepIndex}`, turnId: body.turnId,
  conversationId: body.conversationId, domainTools: [], scope: [],
});
const finish = (body, { text, pending = [] }) => ({
  type: "step-finish", stepId: `stp_${body.stepIndex}`,
  finishReason: pending.length ? "tool-calls" : "stop",
  responseMessages: [{
    role: "assistant",
    content: [
      ...(text ? [{ type: "text", text }] : []),
      ...pending.map((c) => ({ type: "tool-call", toolCallId: c.toolCallId, toolName: c.wireName, input: c.input })),
    ],
  }],
  pendingToolCalls: pending,
  usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reportedSteps: 1 },
});
const call = (id, wireName, input) => ({
  toolCallId: id, wireName, input,
  canonicalId: wireName.startsWith("domain_")
    ? wireName.replace(/^domain_/, "domain:")
    : wireName.replace(/^view_/, "view:").replace(/__/g, "."),
});

// The step-1 text reports what the browser answered, so a test can assert it end to end.
const toolResults = (body) => body.messages
  .filter((m) => m.role === "tool")
  .flatMap((m) => m.content)
  .map((p) => ({ id: p.toolCallId, value: p.output?.value }));

const scenarios = {
  // One step, text only.
  text: (body, res) => {
    res.write(line(start(body)));
    res.write(line({ type: "text-delta", text: "Hello" }));
    res.write(line({ type: "text-delta", text: ", world" }));
    res.end(line(finish(body, { text: "Hello, world" })));
  },
  // The first frame, then nothing until POST /release/<key>: the client must have seen the
  // frame before the body ended, i.e. it read the body as a stream.
  hold: (body, res, key) => {
    res.write(line(start(body)));
    res.write(line({ type: "text-delta", text: "first" }));
    const resume = () => res.end(line(finish(body, { text: "first" })));
    if (released.has(key)) resume(); else held.set(key, resume);
  },
  // A frame with a key no frame type models, then a line that is not JSON.
  raw: (body, res) => {
    res.write(line({ ...start(body), serverNote: "kept" }));
    res.write("{not json\n");
    res.end(line(finish(body, { text: "never used" })));
  },
  // Never finishes: only an abort ends it.
  hang: (body, res) => {
    res.write(line(start(body)));
    res.write(line({ type: "text-delta", text: "thinking" }));
  },
  // Step 0 asks for the widget's two actions and its observation; step 1 echoes the results.
  tools: (body, res) => {
    res.write(line(start(body)));
    if (body.stepIndex === 0) {
      res.end(line(finish(body, { pending: [
        call("c1", "view_test__widget__setFilters", { due: "overdue" }),
        call("c2", "view_test__widget__readState", {}),
        call("c3", "view_test__widget__fail", {}),
        call("c4", "view_test__widget__refuse", {}),
      ] })));
    } else {
      res.end(line(finish(body, { text: JSON.stringify(toolResults(body)) })));
    }
  },
  // A browser-executed domain reference (bound key supplied by the UI).
  procedure: (body, res) => {
    res.write(line(start(body)));
    if (body.stepIndex === 0) {
      res.end(line(finish(body, { pending: [call("c1", "domain_update-collection-status", { status: "chased" })] })));
    } else {
      res.end(line(finish(body, { text: JSON.stringify(toolResults(body)) })));
    }
  },
  // Handlers that never settle (test.stall's action and observation, a domain reference):
  // each must end at its deadline and the turn go on to step 1, which echoes the results.
  stall: (body, res) => {
    res.write(line(start(body)));
    if (body.stepIndex === 0) {
      res.end(line(finish(body, { pending: [
        call("c1", "view_test__stall__hang", {}),
        call("c2", "view_test__stall__readState", {}),
        call("c3", "domain_slow-path", {}),
      ] })));
    } else {
      res.end(line(finish(body, { text: JSON.stringify(toolResults(body)) })));
    }
  },
  // A confirmation-required action.
  confirm: (body, res) => {
    res.write(line(start(body)));
    if (body.stepIndex === 0) {
      res.end(line(finish(body, { pending: [call("c1", "view_test__widget__wipe", {})] })));
    } else {
      res.end(line(finish(body, { text: JSON.stringify(toolResults(body)) })));
    }
  },
};

const server = http.createServer((req, res) => {
  const origin = req.headers.origin ?? "*";
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("access-control-allow-credentials", "true");
  res.setHeader("access-control-allow-headers", "content-type");
  res.setHeader("access-control-allow-methods", "GET, POST");
  if (req.method === "OPTIONS") { res.writeHead(204).end(); return; }
  const [, route, scenario, key = "default"] = req.url.split("?")[0].split("/");
  if (req.method === "POST" && route === "release") {
    released.add(scenario);
    held.get(scenario)?.();
    held.delete(scenario);
    res.writeHead(204).end();
    return;
  }
  if (req.method === "GET" && route === "login") {
    res.writeHead(204, { "set-cookie": "dpas_test_session=s1; Path=/; SameSite=Lax" }).end();
    return;
  }
  if (req.method === "GET" && route === "requests") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(requests.get(scenario) ?? []));
    return;
  }
  if (req.method !== "POST" || route !== "chat" || !scenarios[scenario]) {
    res.writeHead(404).end();
    return;
  }
  let raw = "";
  req.on("data", (chunk) => { raw += chunk; });
  req.on("end", () => {
    const body = JSON.parse(raw);
    if (!requests.has(key)) requests.set(key, []);
    requests.get(key).push({ scenario, body, cookie: req.headers.cookie ?? null });
    res.writeHead(200, { "content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-store" });
    res.flushHeaders();
    scenarios[scenario](body, res, key);
  });
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
