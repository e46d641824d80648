// POST /agent/ai-sdk with the AI SDK's own client pieces, unmodified: DefaultChatTransport
// posts the UI messages and parses the UI message stream (validating every chunk against the
// SDK's schema), readUIMessageStream assembles the assistant message as useChat would.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DefaultChatTransport, readUIMessageStream } from "ai";
import { call, scriptedServer, signIn } from "./server.mjs";

const HIGHLIGHT = {
  wireName: "view_demo__highlight",
  canonicalId: "view:demo.highlight",
  plane: "view",
  description: "Highlights one invoice row on screen.",
  inputSchema: { type: "object", properties: { row: { type: "integer" } }, required: ["row"] },
  effect: "read",
  confirmation: "never",
};

// The scripted model: a server-tool turn with text after it, and a turn that calls one
// client tool and one server tool together.
const SCRIPT = {
  turns: [
    { when: { lastUserContains: "fail" }, text: ["Let me see."], errorAfterText: "The vendor fell over." },
    { when: { lastUserContains: "ageing", lacksResult: "domain_collections-aging" },
      reasoning: "The ladder answers this.", text: ["Checking the ladder."], toolCalls: [{ name: "domain_collections-aging" }] },
    { when: { lastUserContains: "ageing" }, text: ["Most of it", " is not yet due."] },
    { when: { lastUserContains: "highlight", lacksResult: "view_demo__highlight" },
      toolCalls: [{ name: "view_demo__highlight", input: { row: 3 } }, { name: "domain_receivables-summary" }] },
    { when: { lastUserContains: "highlight" }, text: ["Row 3 is highlighted."] },
    { text: ["I only know two tricks."] },
  ],
};

const server = scriptedServer(SCRIPT);

function transport(extraBody = {}) {
  return new DefaultChatTransport({ api: `${server.url}/agent/ai-sdk`, headers: { cookie: server.cookie }, body: extraBody });
}

/** Sends like useChat does and assembles the streamed assistant message; the chunks too. */
async function turn(t, chatId, messages, { trigger = "submit-message", continued } = {}) {
  const chunks = [];
  const stream = await t.sendMessages({ chatId, messages, trigger, messageId: undefined, abortSignal: undefined });
  const tapped = stream.pipeThrough(new TransformStream({ transform(chunk, c) { chunks.push(chunk); c.enqueue(chunk); } }));
  let message;
  for await (const m of readUIMessageStream({ stream: tapped, message: continued, onError: () => {} })) message = m;
  return { message, chunks };
}

const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });

test("a server-tool turn with text after it, usage as message metadata, saved to the owner's thread", async () => {
  const chatId = `chat_${Date.now()}`;
  const { message, chunks } = await turn(transport(), chatId, [user("u1", "How is the ageing?")]);
  const types = chunks.map((c) => c.type);
  assert.equal(types[0], "start");
  assert.equal(types.at(-1), "finish");
  assert.ok(types.includes("reasoning-delta"));
  assert.equal(types.filter((t) => t === "start-step").length, 2, types.join());

  assert.equal(message.role, "assistant");
  const tools = message.parts.filter((p) => p.type === "dynamic-tool");
  assert.equal(tools.length, 1);
  assert.equal(tools[0].toolName, "domain_collections-aging");
  assert.equal(tools[0].state, "output-available");
  assert.equal(tools[0].output.status, "ok");
  assert.ok(Array.isArray(tools[0].output.data));
  const texts = message.parts.filter((p) => p.type === "text").map((p) => p.text);
  assert.deepEqual(texts, ["Checking the ladder.", "Most of it is not yet due."]);
  // The tool part comes before the closing text.
  const toolAt = message.parts.indexOf(tools[0]);
  const lastTextAt = message.parts.findLastIndex((p) => p.type === "text");
  assert.ok(toolAt < lastTextAt);
  assert.equal(message.metadata.finishReason, "stop");
  assert.equal(message.metadata.usage.inputTokens, 32);

  const thread = await call(server.url, server.cookie, "GET", `/api/threads/${chatId}/model-messages`);
  assert.equal(thread.status, 200);
  assert.deepEqual(thread.body.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  const other = await signIn(server.url, "analyst");
  assert.equal((await call(server.url, other, "GET", `/api/threads/${chatId}`)).status, 404);
});

test("a client tool from the catalog is answered with the client's output on the next request", async () => {
  const chatId = `chat_c_${Date.now()}`;
  const t = transport({ catalog: { mode: "direct", frontendTools: [HIGHLIGHT] } });
  const first = await turn(t, chatId, [user("u1", "Please highlight row 3")]);
  const parts = first.message.parts.filter((p) => p.type === "dynamic-tool");
  const client = parts.find((p) => p.toolName === HIGHLIGHT.wireName);
  const serverSide = parts.find((p) => p.toolName === "domain_receivables-summary");
  assert.equal(client.state, "input-available");
  assert.deepEqual(client.input, { row: 3 });
  assert.equal(serverSide.state, "output-available");
  assert.equal(first.message.metadata.finishReason, "tool-calls");
  assert.equal(first.message.metadata.pendingToolCalls, 1);

  // What addToolOutput does to the message, then the automatic resend.
  const answered = structuredClone(first.message);
  Object.assign(answered.parts.find((p) => p.toolCallId === client.toolCallId), { state: "output-available", output: { highlighted: 3 } });
  const second = await turn(t, chatId, [user("u1", "Please highlight row 3"), answered], { continued: answered });
  assert.equal(second.message.id, answered.id);
  assert.equal(second.message.parts.filter((p) => p.type === "text").at(-1).text, "Row 3 is highlighted.");
  const saved = await call(server.url, server.cookie, "GET", `/api/threads/${chatId}/model-messages`);
  const results = saved.body.filter((m) => m.role === "tool").flatMap((m) => m.content).map((p) => p.toolCallId);
  assert.ok(results.includes(client.toolCallId), JSON.stringify(saved.body));
});

test("refusals are typed HTTP errors before anything streams", async () => {
  const anonymous = new DefaultChatTransport({ api: `${server.url}/agent/ai-sdk` });
  await assert.rejects(
    anonymous.sendMessages({ chatId: "c1", messages: [user("u1", "hi")], trigger: "submit-message" }),
    /UNAUTHENTICATED/,
  );
  const tooMany = Array.from({ length: 129 }, (_, i) => ({ ...HIGHLIGHT, wireName: `view_t__t${i}`, canonicalId: `view:t.t${i}` }));
  await assert.rejects(
    transport({ catalog: { mode: "direct", frontendTools: tooMany } })
      .sendMessages({ chatId: "c2", messages: [user("u1", "hi")], trigger: "submit-message" }),
    /CATALOG_TOO_LARGE/,
  );
  for (const body of ["{not json", JSON.stringify({ id: "c3", messages: [{ role: "robot", parts: [] }] })]) {
    const res = await fetch(`${server.url}/agent/ai-sdk`, { method: "POST", headers: { cookie: server.cookie, "content-type": "application/json" }, body });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, "PROTOCOL_DECODE_ERROR");
  }
  const plain = await fetch(`${server.url}/agent/ai-sdk`, { method: "POST", headers: { cookie: server.cookie, "content-type": "text/plain" }, body: "{}" });
  assert.equal(plain.status, 415);
  assert.equal((await plain.json()).error.code, "UNSUPPORTED_MEDIA_TYPE");
});

test("a failing model is an error chunk with our code, and the stream still finishes", async () => {
  const { chunks } = await turn(transport(), `chat_e_${Date.now()}`, [user("u1", "please fail")]).catch((e) => ({ chunks: e.chunks, error: e }));
  const error = chunks.find((c) => c.type === "error");
  assert.ok(error, chunks.map((c) => c.type).join());
  assert.equal(error.errorText, "MODEL_ERROR: The vendor fell over.");
  assert.equal(chunks.at(-1).type, "finish");
  assert.equal(chunks.at(-1).finishReason, "error");
});
