// The todo app's own backend, in plain node:http: it signs users in (a JWT in an HttpOnly
// cookie), keeps their todos in memory, answers host-server's capability calls
// (capabilities.json), and passes every other request to host-server, so the browser sees one
// origin.
import { createServer, request } from "node:http";
import { SignJWT, jwtVerify } from "jose";

export const ISSUER = "todo-backend";
export const AUDIENCE = "todo-app";
export const COOKIE = "todo_token";
const SESSION_SECONDS = 12 * 60 * 60;
const BODY_LIMIT = 16 * 1024;
const REMEMBERED = 1000; // invocations (and calls) kept
// Headers of one connection, not of the message: never passed on by a proxy.
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"];

class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    Object.assign(this, { status, code });
  }
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers });
  res.end(JSON.stringify(body));
}

// The request's JSON body: at most BODY_LIMIT bytes, `application/json`, an object.
async function readJson(req) {
  if (!/^application\/json\b/i.test(req.headers["content-type"] ?? "")) {
    throw new HttpError(415, "UNSUPPORTED_MEDIA_TYPE", "Send JSON (content-type: application/json).");
  }
  let size = 0;
  const chunks = [];
  for await (const chunk of req) {
    size += chunk.length;
    if (size > BODY_LIMIT) throw new HttpError(413, "BODY_TOO_LARGE", "The request body is too large.");
    chunks.push(chunk);
  }
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  } catch {
    throw new HttpError(400, "BAD_REQUEST", "The request body is not valid JSON.");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new HttpError(400, "BAD_REQUEST", "The request body must be a JSON object.");
  }
  return body;
}

/**
 * The backend, not yet listening. `upstream` is host-server's origin (settable later, as
 * `backend.upstream`). `calls` records the last capability calls it answered: who (the verified
 * token's `sub`) and the `X-DPAS-Invocation-Id` it came with.
 */
export function createBackend({ secret, upstream }) {
  if (typeof secret !== "string" || Buffer.byteLength(secret) < 32) {
    throw new Error("the JWT secret (DPAS_JWT_SECRET) must be at least 32 bytes");
  }
  const key = new TextEncoder().encode(secret);
  const lists = new Map(); // user id → { next, todos }
  const invocations = new Map(); // X-DPAS-Invocation-Id → the answer already given
  const calls = [];
  const listOf = (user) => {
    if (!lists.has(user)) lists.set(user, { next: 1, todos: [] });
    return lists.get(user);
  };

  // Stand-in for your identity provider: anyone who reaches it may sign in under any name.
  async function signIn(req, res) {
    // A browser names the page's origin: it must be ours (behind TLS, https, and the cookie
    // is then Secure).
    const origin = URL.parse(req.headers.origin ?? `http://${req.headers.host}`);
    if (origin?.host !== req.headers.host) {
      throw new HttpError(403, "ORIGIN_REFUSED", "Sign in from the app's own page.");
    }
    const { name } = await readJson(req);
    const trimmed = typeof name === "string" ? name.trim() : "";
    if (trimmed.length < 1 || trimmed.length > 40 || /[\p{Cc}\p{Cf}]/u.test(trimmed)) {
      throw new HttpError(400, "BAD_REQUEST", "A name is 1 to 40 printable characters.");
    }
    const user = { id: trimmed.toLowerCase(), name: trimmed };
    const token = await new SignJWT({ name: user.name, role: "editor" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(user.id)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${SESSION_SECONDS}s`)
      .sign(key);
    const secure = origin.protocol === "https:" ? "; Secure" : "";
    const cookie = `${COOKIE}=${token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${SESSION_SECONDS}${secure}`;
    send(res, 200, { user }, { "set-cookie": cookie });
  }

  // The user host-server forwarded the call for: the `Authorization: Bearer` token it received
  // from the browser (from our cookie), checked as any request of ours would be.
  async function caller(req) {
    const [scheme, token] = (req.headers.authorization ?? "").split(" ");
    if (scheme !== "Bearer" || !token) throw new HttpError(401, "UNAUTHENTICATED", "Sign in again.");
    try {
      const { payload } = await jwtVerify(token, key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ["HS256"] });
      return payload.sub;
    } catch {
      throw new HttpError(401, "UNAUTHENTICATED", "Sign in again.");
    }
  }

  // The capabilities of capabilities.json, by id: (user, validated input) → the JSON answer.
  const capabilities = {
    "list-todos": (user) => listOf(user).todos,
    "add-todo": (user, { text }) => {
      const list = listOf(user);
      const todo = { id: list.next++, text: String(text).trim(), done: false };
      list.todos.push(todo);
      return todo;
    },
    "complete-todo": (user, { id }) => {
      const todo = listOf(user).todos.find((t) => t.id === id);
      if (!todo) throw new HttpError(404, "NOT_FOUND", `There is no todo ${id}.`);
      todo.done = true;
      return todo;
    },
    "delete-all-todos": (user) => {
      const list = listOf(user);
      const deleted = list.todos.length;
      list.todos = [];
      return { deleted };
    },
  };

  async function capability(id, req, res) {
    const run = Object.hasOwn(capabilities, id) ? capabilities[id] : undefined;
    if (!run || req.method !== "POST") throw new HttpError(404, "NOT_FOUND", "No such capability.");
    const user = await caller(req);
    const invocationId = req.headers["x-dpas-invocation-id"];
    if (typeof invocationId !== "string" || !invocationId) {
      throw new HttpError(400, "BAD_REQUEST", "X-DPAS-Invocation-Id is missing.");
    }
    const input = await readJson(req);
    // The same invocation twice (a retry after a lost answer) is answered, not run, again.
    const seen = invocations.get(invocationId);
    if (seen && seen.user === user && seen.id === id) return send(res, 200, seen.answer);
    const answer = run(user, input);
    calls.push({ id, user, invocationId });
    if (calls.length > REMEMBERED) calls.shift();
    invocations.set(invocationId, { id, user, answer });
    if (invocations.size > REMEMBERED) invocations.delete(invocations.keys().next().value);
    send(res, 200, answer);
  }

  // Everything else is host-server's (the agent's doors, /rpc, approvals, the app's build):
  // streamed both ways, the Host header kept so that its same-origin check sees our origin.
  function proxy(req, res) {
    if (!backend.upstream) return send(res, 502, { error: { code: "UPSTREAM_UNAVAILABLE", message: "The assistant server is not configured." } });
    const headers = { ...req.headers };
    for (const name of HOP_BY_HOP) delete headers[name];
    const forward = request(new URL(req.url, backend.upstream), { method: req.method, headers }, (answer) => {
      const back = { ...answer.headers };
      for (const name of HOP_BY_HOP) delete back[name];
      res.writeHead(answer.statusCode, back);
      answer.pipe(res);
    });
    forward.on("error", () => {
      if (!res.headersSent) send(res, 502, { error: { code: "UPSTREAM_UNAVAILABLE", message: "The assistant server cannot be reached." } });
      else res.destroy();
    });
    res.on("close", () => forward.destroy()); // the browser left: stop asking
    req.pipe(forward);
  }

  async function route(req, res) {
    const { pathname } = new URL(req.url, "http://backend");
    if (pathname === "/api/sign-in" && req.method === "POST") return signIn(req, res);
    const found = /^\/capabilities\/([^/]+)$/.exec(pathname);
    if (found) return capability(found[1], req, res);
    proxy(req, res);
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error) => {
      if (error instanceof HttpError) return send(res, error.status, { error: { code: error.code, message: error.message } });
      console.error(error);
      if (res.headersSent) return res.destroy();
      send(res, 500, { error: { code: "INTERNAL", message: "The todo backend failed." } });
    });
  });
  const backend = { server, upstream, calls, todosOf: (user) => listOf(user).todos };
  return backend;
}
