// MCP at /mcp with the official TypeScript SDK's client and streamable HTTP transport,
// unmodified: bearer identity from POST /api/session/token, the actor's catalog, a governed
// read, the approval gate with its deep link, resume after a person approves in the app,
// and refusal without identity or with a forged token.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { call, signIn, startServer } from "./server.mjs";

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

async function tokenFor(role) {
  const cookie = await signIn(server.url, role);
  const { status, body } = await call(server.url, cookie, "POST", "/api/session/token");
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.tokenType, "Bearer");
  assert.equal(body.mcpUrl, `${server.url}/mcp`);
  return { cookie, token: body.token };
}

async function connect(headers) {
  const client = new Client({ name: "dpas-interop", version: "0.1.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

const names = (tools) => tools.map((t) => t.name).sort();
// list-invoices answers rows, or {rows, totalRows, truncatedForModel} past the model surfaces' cap.
const rows = (result) => {
  const data = result.structuredContent.data;
  return Array.isArray(data) ? data : data.rows;
};

test("a controller lists the governed catalog, reads, hits the approval gate and resumes once", async () => {
  const { cookie, token } = await tokenFor("controller");
  const client = await connect({ Authorization: `Bearer ${token}` });
  try {
    assert.equal(client.getServerVersion().name, "dpas-host");
    const { tools } = await client.listTools();
    assert.deepEqual(names(tools), [
      "approvals_resume", "collections-aging", "create-invoice", "delete-invoice", "issue-invoice",
      "list-clients", "list-invoices", "mark-invoice-paid", "receivables-summary",
      "update-collection-status", "update-invoice",
    ]);
    const issue = tools.find((t) => t.name === "issue-invoice");
    assert.equal(issue.inputSchema.type, "object");
    assert.equal(issue.annotations.destructiveHint, true);
    assert.match(issue.description, /Requires approval\.$/);
    assert.equal(tools.find((t) => t.name === "list-invoices").annotations.readOnlyHint, true);

    const pending = await client.callTool({ name: "list-invoices", arguments: { kind: "pending" } });
    assert.equal(pending.isError, false);
    assert.equal(pending.structuredContent.status, "ok");
    assert.ok(rows(pending).length > 0);
    assert.deepEqual(JSON.parse(pending.content[0].text), pending.structuredContent.data);

    const drafts = await client.callTool({ name: "list-invoices", arguments: { kind: "draft" } });
    const draft = rows(drafts)[0];
    assert.equal(draft.status, "draft");

    const gated = await client.callTool({ name: "issue-invoice", arguments: { id: draft.id } });
    assert.equal(gated.isError, false);
    const { approvalId, approvalUrl, expiresAt } = gated.structuredContent;
    assert.equal(gated.structuredContent.status, "approval-required");
    assert.match(approvalId, /^apr_/);
    assert.equal(approvalUrl, `${server.url}/approvals/${approvalId}`);
    assert.ok(Date.parse(expiresAt) > Date.now());
    assert.match(gated.content[0].text, new RegExp(approvalUrl));

    const early = await client.callTool({ name: "approvals_resume", arguments: { approvalId } });
    assert.equal(early.isError, true);
    assert.equal(early.structuredContent.error.code, "APPROVAL_PENDING");

    // A person decides in the app; deciding runs nothing for an MCP request.
    const decided = await call(server.url, cookie, "POST", `/api/approvals/${approvalId}`, { approved: true });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.resolution.status, "approved");
    const stillDraft = await client.callTool({ name: "list-invoices", arguments: { kind: "draft" } });
    assert.ok(rows(stillDraft).some((r) => r.id === draft.id));

    const resumed = await client.callTool({ name: "approvals_resume", arguments: { approvalId } });
    assert.equal(resumed.isError, false, JSON.stringify(resumed));
    assert.equal(resumed.structuredContent.status, "ok");
    assert.equal(resumed.structuredContent.data.id, draft.id);
    assert.equal(resumed.structuredContent.data.status, "sent");

    const again = await client.callTool({ name: "approvals_resume", arguments: { approvalId } });
    assert.equal(again.isError, true);
    assert.equal(again.structuredContent.error.code, "APPROVAL_CONSUMED");
  } finally {
    await client.close();
  }
});

test("an analyst sees reads only, and cannot resume another user's approval", async () => {
  const { token } = await tokenFor("analyst");
  const client = await connect({ Authorization: `Bearer ${token}` });
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(names(tools), [
      "approvals_resume", "collections-aging", "list-clients", "list-invoices", "receivables-summary",
    ]);
    // A hidden write is refused exactly like an unknown one, and nothing runs.
    const hidden = await client.callTool({ name: "create-invoice", arguments: { clientId: 1, amount: 100 } });
    const unknown = await client.callTool({ name: "no-such-tool", arguments: {} });
    assert.equal(hidden.isError, true);
    assert.deepEqual(hidden.structuredContent, unknown.structuredContent);
    assert.equal(unknown.structuredContent.error.code, "CAPABILITY_NOT_FOUND");

    const controller = await tokenFor("controller");
    const carla = await connect({ Authorization: `Bearer ${controller.token}` });
    try {
      const drafts = await carla.callTool({ name: "list-invoices", arguments: { kind: "draft" } });
      const id = rows(drafts)[0].id;
      const gated = await carla.callTool({ name: "delete-invoice", arguments: { id } });
      const { approvalId } = gated.structuredContent;
      const decided = await call(server.url, controller.cookie, "POST", `/api/approvals/${approvalId}`, { approved: true });
      assert.equal(decided.body.resolution.status, "approved");
      const theirs = await client.callTool({ name: "approvals_resume", arguments: { approvalId } });
      assert.equal(theirs.isError, true);
      assert.equal(theirs.structuredContent.error.code, "APPROVAL_NOT_FOUND");
      // The record is still runnable by the one who asked.
      const own = await carla.callTool({ name: "approvals_resume", arguments: { approvalId } });
      assert.equal(own.structuredContent.status, "ok", JSON.stringify(own));
    } finally {
      await carla.close();
    }
  } finally {
    await client.close();
  }
});

test("a bad argument is a typed tool error and nothing runs", async () => {
  const { token } = await tokenFor("controller");
  const client = await connect({ Authorization: `Bearer ${token}` });
  try {
    const before = await client.callTool({ name: "receivables-summary", arguments: {} });
    const wrong = await client.callTool({ name: "create-invoice", arguments: { clientId: "one", amount: -5 } });
    assert.equal(wrong.isError, true);
    assert.equal(wrong.structuredContent.error.code, "INPUT_INVALID");
    const afterwards = await client.callTool({ name: "receivables-summary", arguments: {} });
    assert.deepEqual(afterwards.structuredContent, before.structuredContent);
  } finally {
    await client.close();
  }
});

test("no identity, a forged token and a tampered token are refused with 401", async () => {
  const { token } = await tokenFor("analyst");
  const tampered = token.replace("analyst", "controller");
  assert.notEqual(tampered, token);
  for (const headers of [{}, { Authorization: "Bearer not-a-token" }, { Authorization: `Bearer ${tampered}` }]) {
    const client = new Client({ name: "dpas-interop", version: "0.1.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers } });
    await assert.rejects(client.connect(transport), (err) => {
      assert.ok(err instanceof StreamableHTTPError, String(err));
      assert.equal(err.code, 401);
      return true;
    });
  }
});
