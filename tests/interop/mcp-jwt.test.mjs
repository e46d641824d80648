// MCP at /mcp with the official TypeScript SDK, unmodified, against `--auth jwt`: the app's
// own HS256 token (minted here with Node's HMAC, as an app's backend would) is the bearer;
// its role claim decides the catalog; an approval is decided in the app with the same token
// and resumed once; an expired or foreign token is 401 before anything runs.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startServer } from "./server.mjs";

const SECRET = "interop-app-backend-secret-of-32+-bytes";
const ISSUER = "https://todo.interop.test";
const AUDIENCE = "dpas-host";

let server;
before(async () => {
  server = await startServer([
    "--auth", "jwt", "--jwt-secret", SECRET, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE,
  ]);
});
after(() => server?.stop());

const b64url = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** An HS256 JWT for `sub` with `role`; `claims` overrides any claim. */
function jwt(sub, role, claims = {}, secret = SECRET) {
  const now = Math.floor(Date.now() / 1000);
  const body = { sub, role, name: `User ${sub}`, iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 300, ...claims };
  const unsigned = `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(body)}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

async function connect(token) {
  const client = new Client({ name: "dpas-interop-jwt", version: "0.1.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

const names = (tools) => tools.map((t) => t.name).sort();

test("the app's JWT is the MCP identity: its role picks the catalog, its holder resumes an approval", async () => {
  const token = jwt("carla-7", "controller");
  const client = await connect(token);
  try {
    const { tools } = await client.listTools();
    assert.ok(names(tools).includes("issue-invoice"), names(tools).join());
    const drafts = await client.callTool({ name: "list-invoices", arguments: { kind: "draft" } });
    const data = drafts.structuredContent.data;
    const draft = (Array.isArray(data) ? data : data.rows)[0];
    const gated = await client.callTool({ name: "issue-invoice", arguments: { id: draft.id } });
    assert.equal(gated.structuredContent.status, "approval-required", JSON.stringify(gated));
    const { approvalId } = gated.structuredContent;

    // The person decides in the app, which sends the same token.
    const res = await fetch(`${server.url}/api/approvals/${approvalId}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ approved: true }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).resolution.status, "approved");

    const resumed = await client.callTool({ name: "approvals_resume", arguments: { approvalId } });
    assert.equal(resumed.structuredContent.status, "ok", JSON.stringify(resumed));
    assert.equal(resumed.structuredContent.data.status, "sent");
  } finally {
    await client.close();
  }

  const analyst = await connect(jwt("ada-9", "analyst"));
  try {
    const { tools } = await analyst.listTools();
    assert.deepEqual(names(tools), [
      "approvals_resume", "collections-aging", "list-clients", "list-invoices", "receivables-summary",
    ]);
  } finally {
    await analyst.close();
  }
});

test("an expired token, another secret's token and a token for another audience are 401", async () => {
  const now = Math.floor(Date.now() / 1000);
  for (const token of [
    jwt("carla-7", "controller", { exp: now - 600 }),
    jwt("carla-7", "controller", {}, "someone-elses-secret-of-enough-length"),
    jwt("carla-7", "controller", { aud: "another-api" }),
  ]) {
    await assert.rejects(connect(token), (err) => {
      assert.ok(err instanceof StreamableHTTPError, String(err));
      assert.equal(err.code, 401);
      return true;
    });
  }
});
