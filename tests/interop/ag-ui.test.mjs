// POST /agent/ag-ui with @ag-ui/client's HttpAgent, unmodified: it posts RunAgentInput,
// parses the SSE events, verifies their sequence and applies them to its messages. A turn
// with one client tool and one server tool, then a second run carrying the client's result.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpAgent } from "@ag-ui/client";
import { call, scriptedServer, signIn } from "./server.mjs";

const HIGHLIGHT = {
  name: "highlight_row",
  description: "Highlights one invoice row on screen.",
  parameters: { type: "object", properties: { row: { type: "integer" } }, required: ["row"] },
};

const SCRIPT = {
  turns: [
    { when: { lastUserContains: "fail" }, text: ["Let me see."], errorAfterText: "The vendor fell over." },
    { when: { lastUserContains: "highlight", lacksResult: "highlight_row" },
      reasoning: "Summary first, then the row.", text: ["On it."],
      toolCalls: [{ name: "highlight_row", input: { row: 3 } }, { name: "domain_receivables-summary" }] },
    { when: { lastUserContains: "highlight" }, text: ["Row 3 is highlighted", " and the summary is in."] },
    { text: ["Nothing to do."] },
  ],
};

const server = scriptedServer(SCRIPT);

function agent(headers = { cookie: server.cookie }) {
  return new HttpAgent({ url: `${server.url}/agent/ag-ui`, headers });
}

async function run(a, params) {
  const events = [];
  const result = await a.runAgent(params, { onEvent: ({ event }) => void events.push(event) });
  return { result, events };
}

test("a client tool and a server tool in one run, then a second run with the client's result", async () => {
  const a = agent();
  a.addMessage({ id: "u1", role: "user", content: "Please highlight row 3" });
  const first = await run(a, { tools: [HIGHLIGHT], forwardedProps: { pathname: "/receivables/pending" } });
  const types = first.events.map((e) => e.type);
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types.at(-1), "RUN_FINISHED");
  for (const t of ["REASONING_START", "REASONING_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]) {
    assert.ok(types.includes(t), `${t} in ${types.join()}`);
  }
  const starts = first.events.filter((e) => e.type === "TOOL_CALL_START");
  assert.deepEqual(starts.map((e) => e.toolCallName), ["highlight_row", "domain_receivables-summary"]);
  const results = first.events.filter((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(results.length, 1, "only the server's call has a result");
  assert.equal(results[0].toolCallId, starts[1].toolCallId);
  assert.equal(JSON.parse(results[0].content).status, "ok");
  const finished = first.events.at(-1);
  assert.equal(finished.outcome.type, "success");
  assert.deepEqual(finished.outcome.pendingToolCallIds, [starts[0].toolCallId]);
  assert.equal(finished.usage[0].inputTokens, 16);

  // HttpAgent applied the events: one assistant message with both calls, the server's result.
  const assistant = a.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
  assert.deepEqual(assistant.toolCalls.map((c) => c.function.name), ["highlight_row", "domain_receivables-summary"]);
  assert.deepEqual(JSON.parse(assistant.toolCalls[0].function.arguments), { row: 3 });
  assert.equal(assistant.content, "On it.");

  // The client runs its tool and sends the result as a tool message.
  a.addMessage({ id: "t1", role: "tool", toolCallId: starts[0].toolCallId, content: JSON.stringify({ highlighted: 3 }) });
  const second = await run(a, { tools: [HIGHLIGHT], forwardedProps: { pathname: "/receivables/pending" } });
  assert.equal(second.events.at(-1).type, "RUN_FINISHED");
  assert.equal(second.events.at(-1).outcome.pendingToolCallIds, undefined);
  const last = a.messages.at(-1);
  assert.equal(last.role, "assistant");
  assert.equal(last.content, "Row 3 is highlighted and the summary is in.");

  // The thread is the signed-in user's, keyed by threadId, with the client's result saved.
  const saved = await call(server.url, server.cookie, "GET", `/api/threads/${a.threadId}/model-messages`);
  assert.equal(saved.status, 200);
  const answered = saved.body.filter((m) => m.role === "tool").flatMap((m) => m.content).map((p) => p.toolCallId);
  assert.ok(answered.includes(starts[0].toolCallId), JSON.stringify(saved.body));
  const analyst = await signIn(server.url, "analyst");
  assert.equal((await call(server.url, analyst, "GET", `/api/threads/${a.threadId}`)).status, 404);
});

test("client tool names a provider would refuse, shared names and a domain tool's name are reported, never renamed", async () => {
  const a = agent();
  a.addMessage({ id: "u1", role: "user", content: "Nothing special" });
  const tools = [
    { name: "bad name!", description: "" },
    { name: "twice", description: "" },
    { name: "twice", description: "" },
    { name: "domain_list-invoices", description: "" },
  ];
  const { events } = await run(a, { tools, forwardedProps: { pathname: "/receivables/pending" } });
  const custom = Object.fromEntries(events.filter((e) => e.type === "CUSTOM").map((e) => [e.name, e.value]));
  assert.deepEqual(custom["dpas.tools.refused"].names, ["bad name!", "twice"]);
  assert.deepEqual(custom["dpas.catalog.collision"].data.capabilityIds, ["view:domain_list-invoices"]);
  assert.equal(events.at(-1).type, "RUN_FINISHED");
});

test("refusals are typed errors before anything streams", async () => {
  const anonymous = agent({});
  anonymous.addMessage({ id: "u1", role: "user", content: "hi" });
  await assert.rejects(anonymous.runAgent({}), /401|UNAUTHENTICATED/);
  for (const body of ["{not json", JSON.stringify({ threadId: "t", runId: "r", messages: [{ id: "x", role: "robot" }] })]) {
    const res = await fetch(`${server.url}/agent/ag-ui`, { method: "POST", headers: { cookie: server.cookie, "content-type": "application/json" }, body });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, "PROTOCOL_DECODE_ERROR");
  }
  const plain = await fetch(`${server.url}/agent/ag-ui`, { method: "POST", headers: { cookie: server.cookie, "content-type": "text/plain" }, body: "{}" });
  assert.equal(plain.status, 415);
  assert.equal((await plain.json()).error.code, "UNSUPPORTED_MEDIA_TYPE");
});

test("a failing model ends the run with RUN_ERROR and our code", async () => {
  const a = agent();
  a.addMessage({ id: "u1", role: "user", content: "please fail" });
  const events = [];
  await a.runAgent({}, { onEvent: ({ event }) => void events.push(event) }).catch(() => {});
  const types = events.map((e) => e.type);
  assert.equal(types[0], "RUN_STARTED");
  assert.ok(types.includes("TEXT_MESSAGE_CONTENT"));
  const last = events.at(-1);
  assert.equal(last.type, "RUN_ERROR", types.join());
  assert.equal(last.code, "MODEL_ERROR");
  assert.equal(last.message, "The vendor fell over.");
  assert.ok(!types.includes("RUN_FINISHED"));
});
