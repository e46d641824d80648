// The backend's own doors, without host-server: what a browser or a stranger can send it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { SignJWT } from "jose";
import { AUDIENCE, COOKIE, ISSUER, createBackend } from "./backend.mjs";

const secret = "test-secret-of-the-todo-backend-0123456789";
let backend;
let origin;

before(async () => {
  backend = createBackend({ secret });
  await new Promise((resolve) => backend.server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${backend.server.address().port}`;
});
after(() => backend.server.close());

const post = (path, body, headers = {}) =>
  fetch(origin + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function refused(response, status, code) {
  assert.equal(response.status, status);
  assert.equal((await response.json()).error.code, code);
}

// A token like the sign-in's, signed with `key` and changed by `edit`.
const token = (key = secret, edit = (jwt) => jwt) =>
  edit(new SignJWT({ name: "Sam" }).setProtectedHeader({ alg: "HS256" }).setSubject("sam")
    .setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime("1h"))
    .sign(new TextEncoder().encode(key));

test("the sign-in sets an HttpOnly cookie holding a token of this backend's", async () => {
  const response = await post("/api/sign-in", { name: "  Sam " });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { user: { id: "sam", name: "Sam" } });
  const cookie = response.headers.get("set-cookie");
  assert.match(cookie, new RegExp(`^${COOKIE}=[\\w-]+\\.[\\w-]+\\.[\\w-]+; HttpOnly; SameSite=Lax; Path=/; Max-Age=43200$`));
  // host-server forwards the cookie's token as a bearer token: the capabilities take it.
  const jwt = cookie.slice(COOKIE.length + 1, cookie.indexOf(";"));
  const listed = await post("/capabilities/list-todos", {}, { authorization: `Bearer ${jwt}`, "x-dpas-invocation-id": "exe_1" });
  assert.equal(listed.status, 200);
  assert.deepEqual(await listed.json(), []);
});

test("the sign-in refuses what is not a name, not JSON, or from another origin", async () => {
  await refused(await post("/api/sign-in", { name: "" }), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", { name: "x".repeat(41) }), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", { name: "a\u202eb" }), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", { name: 7 }), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", "{\"name\":"), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", "[]"), 400, "BAD_REQUEST");
  await refused(await post("/api/sign-in", { name: "x".repeat(20000) }), 413, "BODY_TOO_LARGE");
  await refused(await post("/api/sign-in", "name=Sam", { "content-type": "application/x-www-form-urlencoded" }), 415, "UNSUPPORTED_MEDIA_TYPE");
  await refused(await post("/api/sign-in", { name: "Sam" }, { origin: "http://evil.test" }), 403, "ORIGIN_REFUSED");
  await refused(await post("/api/sign-in", { name: "Sam" }, { origin: "null" }), 403, "ORIGIN_REFUSED");
});

test("a sign-in from an https page of ours gets a Secure cookie", async () => {
  const response = await post("/api/sign-in", { name: "Sam" }, { origin: `https://${new URL(origin).host}` });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("set-cookie"), /; Max-Age=43200; Secure$/);
});

test("a capability call needs a valid token of this backend's and an invocation id", async () => {
  const call = (headers) => post("/capabilities/add-todo", { text: "milk" }, headers);
  const id = { "x-dpas-invocation-id": "exe_2" };
  await refused(await call(id), 401, "UNAUTHENTICATED");
  await refused(await call({ ...id, authorization: `Basic ${await token()}` }), 401, "UNAUTHENTICATED");
  await refused(await call({ ...id, authorization: `Bearer ${await token("another-secret-of-at-least-32-bytes!!")}` }), 401, "UNAUTHENTICATED");
  await refused(await call({ ...id, authorization: `Bearer ${await token(secret, (jwt) => jwt.setExpirationTime(1))}` }), 401, "UNAUTHENTICATED");
  await refused(await call({ ...id, authorization: `Bearer ${await token(secret, (jwt) => jwt.setAudience("other"))}` }), 401, "UNAUTHENTICATED");
  await refused(await call({ authorization: `Bearer ${await token()}` }), 400, "BAD_REQUEST");
  await refused(await post("/capabilities/drop-tables", {}, { ...id, authorization: `Bearer ${await token()}` }), 404, "NOT_FOUND");
  assert.deepEqual(backend.todosOf("sam"), []);
});

test("a repeated invocation id is answered once more, not run twice", async () => {
  const headers = { authorization: `Bearer ${await token()}`, "x-dpas-invocation-id": "exe_3" };
  const first = await (await post("/capabilities/add-todo", { text: "bread" }, headers)).json();
  const again = await (await post("/capabilities/add-todo", { text: "bread" }, headers)).json();
  assert.deepEqual(again, first);
  assert.deepEqual(backend.todosOf("sam").map((t) => t.text), ["bread"]);
  const missing = await post("/capabilities/complete-todo", { id: 99 }, { ...headers, "x-dpas-invocation-id": "exe_4" });
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.message, "There is no todo 99.");
});

test("everything else goes to host-server, streamed, with the browser's Host; 502 when it is down", async () => {
  const seen = [];
  let release;
  const released = new Promise((resolve) => (release = resolve));
  const upstream = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, host: req.headers.host, cookie: req.headers.cookie });
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    res.write('{"type":"start"}\n');
    // The rest only once the browser has the first line: nothing may wait for the whole body.
    released.then(() => res.end('{"type":"finish"}\n'));
  });
  await new Promise((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  backend.upstream = `http://127.0.0.1:${upstream.address().port}`;
  try {
    const answer = await post("/agent/chat?x=1", { messages: [] }, { cookie: `${COOKIE}=abc` });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "application/x-ndjson");
    const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
    assert.deepEqual(await reader.read(), { done: false, value: '{"type":"start"}\n' });
    release();
    assert.deepEqual(await reader.read(), { done: false, value: '{"type":"finish"}\n' });
    assert.equal((await reader.read()).done, true);
    assert.deepEqual(seen, [{ method: "POST", url: "/agent/chat?x=1", host: new URL(origin).host, cookie: `${COOKIE}=abc` }]);
  } finally {
    await new Promise((resolve) => upstream.close(resolve));
  }
  await refused(await fetch(`${origin}/api/session`), 502, "UPSTREAM_UNAVAILABLE");
});

test("a secret shorter than 32 bytes is refused", () => {
  assert.throws(() => createBackend({ secret: "short" }), /at least 32 bytes/);
  assert.throws(() => createBackend({}), /at least 32 bytes/);
});
