// The per-step cost of @dpas/host in the browser, measured with performance.now() in a page
// that bench.mjs drives. `fetch` is replaced by an in-page step endpoint that answers at once,
// so every figure is the host's own work:
//   - step-finish → next request posted, for a step whose one call is an observation read
//     (no settle-wait): J5 dispatch, the snapshot, availability, descriptors and state,
//     request encoding; at 16 and 128 registered capabilities;
//   - the same for a local-state action, which adds the settle-wait of a quiet UI;
//   - that settle-wait timed on its own: from the action's `tool-result` event (emitted just
//     before the wait starts) to the delivery of its last task yield, each yield being a
//     `MessageChannel` round trip the page observes through a wrapped constructor;
//   - decoding a recorded step (a reference trace's NDJSON, given by bench.mjs): response
//     handed over → its step-finish decoded.
// Peers measured beside them in the same page: what plain JS spends on the same bytes
// (JSON.parse + JSON.stringify of the posted request; split + JSON.parse of the trace).
import init, { Surface, runTurn } from "./pkg/dpas_host.js";

const line = (frame) => JSON.stringify(frame) + "\n";
const ndjson = (text) => new Response(new ReadableStream({
  start(controller) {
    controller.enqueue(new TextEncoder().encode(text));
    controller.close();
  },
}), { status: 200, headers: { "content-type": "application/x-ndjson; charset=utf-8" } });

const start = (body) => ({
  type: "step-start", stepId: `stp_${body.stepIndex}`, turnId: body.turnId,
  conversationId: body.conversationId, domainTools: [], scope: [],
});
const finish = (body, text, pending) => ({
  type: "step-finish", stepId: `stp_${body.stepIndex}`,
  finishReason: pending.length ? "tool-calls" : "stop",
  responseMessages: [{ role: "assistant", content: [
    ...(text ? [{ type: "text", text }] : []),
    ...pending.map((c) => ({ type: "tool-call", toolCallId: c.toolCallId, toolName: c.wireName, input: c.input })),
  ] }],
  pendingToolCalls: pending,
  usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reportedSteps: 1 },
});

// n capabilities: components of one observation and three actions, schemas like the demo's.
function surfaceWith(n) {
  const surface = new Surface();
  for (let i = 0; i < n / 4; i++) {
    surface.register({
      type: `bench.table${i}`, description: `Table ${i} of invoices.`,
      observations: [{ name: "readState", description: "The visible rows and the filters.",
        outputSchema: { type: "object" }, read: () => ({ rows: [{ id: i }], total: 1 }) }],
      actions: [
        { name: "setFilters", description: "Narrow the rows.", effect: "local-state",
          inputSchema: { type: "object", properties: {
            due: { type: "string", enum: ["overdue", "upcoming", "all"] },
            client: { type: "string", maxLength: 80 } }, additionalProperties: false },
          execute: () => undefined },
        { name: "sort", description: "Sort the rows.", effect: "local-state",
          inputSchema: { type: "object", properties: { by: { type: "string", pattern: "^[a-z]+$" },
            descending: { type: "boolean" } }, required: ["by"], additionalProperties: false },
          execute: () => undefined },
        { name: "select", description: "Select a row.", effect: "local-state", idempotent: true,
          inputSchema: { type: "object", properties: { id: { type: "integer", minimum: 1 } },
            required: ["id"] },
          execute: () => undefined },
      ],
    });
  }
  return surface;
}

// Every task yield of the host is a fresh MessageChannel whose port1 gets one message: a
// listener added at construction runs before the host's own `onmessage` (registration order)
// and records when the yield was delivered.
let yields = [];
globalThis.MessageChannel = class extends MessageChannel {
  constructor() {
    super();
    const entry = { deliveredAt: 0 };
    yields.push(entry);
    this.port1.addEventListener("message", () => { entry.deliveredAt = performance.now(); });
  }
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const summary = (xs) => ({ median: median(xs), p90: p90(xs), runs: xs.length });

// One two-step turn: step 0 asks for `tool`, step 1 answers. Returns finish → post (ms), the
// settle-wait (ms, 0 when there was none) with its task yields, and the step-1 request body.
async function oneTurn(surface, tool, input) {
  let finishedAt = 0;
  let resultAt = 0;
  let postedAt = 0;
  let posted = "";
  let settled = [];
  globalThis.fetch = async (request) => {
    const now = performance.now();
    const text = await request.text();
    const body = JSON.parse(text);
    if (body.stepIndex === 0) {
      const call = { toolCallId: "c1", wireName: `view_bench__table0__${tool}`,
        canonicalId: `view:bench.table0.${tool}`, input };
      return ndjson(line(start(body)) + line(finish(body, "", [call])));
    }
    postedAt = now;
    posted = text;
    settled = yields;
    return ndjson(line(start(body)) + line(finish(body, "Done.", [])));
  };
  const result = await runTurn({
    endpoint: "/bench/chat", surface, conversationId: "cnv_bench",
    messages: [{ role: "user", content: "go" }], pathname: "/bench",
    onFrame: (frame) => { if (frame.type === "step-finish" && !finishedAt) finishedAt = performance.now(); },
    onEvent: (event) => {
      if (event.type === "tool-result" && !resultAt) {
        resultAt = performance.now();
        yields = [];
      }
    },
  });
  if (result.status !== "completed") throw new Error(`turn ${result.status}: ${JSON.stringify(result.error)}`);
  const last = Math.max(0, ...settled.map((y) => y.deliveredAt));
  return { ms: postedAt - finishedAt, settleMs: last ? last - resultAt : 0, ticks: settled.length, posted };
}

async function perStep(n, runs) {
  const surface = surfaceWith(n);
  const out = {};
  for (const [name, tool, input] of [["read", "readState", {}], ["action", "setFilters", { due: "overdue" }]]) {
    const times = [];
    const settles = [];
    const ticks = [];
    let posted = "";
    for (let i = 0; i < runs + 5; i++) {
      const turn = await oneTurn(surface, tool, input);
      if (i >= 5) {
        times.push(turn.ms);
        settles.push(turn.settleMs);
        ticks.push(turn.ticks);
      }
      posted = turn.posted;
    }
    out[name] = summary(times);
    if (name === "action") out.settle = { ...summary(settles), ticks: median(ticks) };
    out.requestBytes = posted.length;
    if (name === "read") {
      const peer = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        JSON.stringify(JSON.parse(posted));
        peer.push(performance.now() - t0);
      }
      out.peerJson = summary(peer);
    }
  }
  return out;
}

// Decoding a recorded step: the trace's body handed over as one chunk → its step-finish
// decoded (then the turn is cancelled before it runs anything).
async function decode(trace, runs) {
  const surface = new Surface();
  const times = [];
  for (let i = 0; i < runs + 5; i++) {
    let handedAt = 0;
    let finishedAt = 0;
    const controller = new AbortController();
    globalThis.fetch = async () => { handedAt = performance.now(); return ndjson(trace); };
    await runTurn({
      endpoint: "/bench/chat", surface, conversationId: "cnv_bench", signal: controller.signal,
      messages: [{ role: "user", content: "go" }], pathname: "/bench",
      onFrame: (frame) => {
        if (frame.type === "step-finish") { finishedAt = performance.now(); controller.abort(); }
      },
    });
    if (!finishedAt) throw new Error("the recorded step did not finish");
    if (i >= 5) times.push(finishedAt - handedAt);
  }
  const peer = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    trace.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    peer.push(performance.now() - t0);
  }
  return { host: summary(times), peerJson: summary(peer), bytes: trace.length,
    frames: trace.split("\n").filter((l) => l.trim()).length };
}

window.runBench = async (trace, runs) => {
  await init();
  return {
    steps: { 16: await perStep(16, runs), 128: await perStep(128, runs) },
    decode: await decode(trace, runs),
  };
};
window.benchReady = true;
