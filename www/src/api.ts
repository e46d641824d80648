// The server's HTTP API as the app uses it: /rpc/<capability-id>, the demo sign-in,
// approvals and threads. Every call sends the session cookie.
import type { ApprovalCard, ApprovalDecision as HostApprovalDecision } from "@dpas/host";

export type Role = "controller" | "analyst";

export interface SessionUser {
  email: string;
  name: string;
  role: Role;
}

export interface Session {
  user: SessionUser;
  models: string[];
  defaultModel?: string | null;
}

export interface RpcErrorBody {
  code: string;
  message: string;
  retryable?: boolean;
  details?: unknown;
}

/** A refused or failed `/rpc` call, with the server's code and the HTTP status. */
export class RpcError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details?: unknown;
  constructor(status: number, body: RpcErrorBody) {
    super(body.message);
    this.name = "RpcError";
    this.code = body.code;
    this.status = status;
    this.details = body.details;
  }
}

async function json(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** POST /rpc/<id> with the input as the body; resolves with `data` of the ok envelope. */
export async function rpc<T>(capabilityId: string, input: object = {}): Promise<T> {
  const response = await fetch(`/rpc/${capabilityId}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(input),
  });
  const body = (await json(response)) as
    | { status: "ok"; data: T }
    | { status: "error"; error: RpcErrorBody }
    | { error?: RpcErrorBody }
    | null;
  if (body && "status" in body && body.status === "ok") return body.data;
  const error =
    body && "error" in body && body.error
      ? body.error
      : { code: "TRANSPORT", message: `HTTP ${response.status}` };
  throw new RpcError(response.status, error);
}

/** The current session, or null when there is none (401). */
export async function getSession(): Promise<Session | null> {
  const response = await fetch("/api/session", { credentials: "same-origin" });
  if (response.status === 401) return null;
  if (!response.ok) throw new Error(`GET /api/session: HTTP ${response.status}`);
  return (await response.json()) as Session;
}

/** Demo sign-in (re-signs the cookie with that role). */
export async function signIn(role: Role): Promise<void> {
  const response = await fetch("/api/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role }),
  });
  if (!response.ok) throw new Error(`POST /api/session: HTTP ${response.status}`);
}

export interface ThreadMeta {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
}

export async function listThreads(): Promise<ThreadMeta[]> {
  const response = await fetch("/api/threads", { credentials: "same-origin" });
  if (!response.ok) throw new Error(`GET /api/threads: HTTP ${response.status}`);
  return (await response.json()) as ThreadMeta[];
}

/** What `POST /api/approvals/:id` answers. */
export type ApprovalDecision = Pick<HostApprovalDecision, "receipt" | "resolution">;

/** `threadId`: the thread the receipt is appended to, when the decision is made in one. */
export async function decideApproval(
  approvalId: string,
  approved: boolean,
  threadId?: string,
): Promise<ApprovalDecision> {
  const response = await fetch(`/api/approvals/${encodeURIComponent(approvalId)}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ approved, threadId }),
  });
  const body = (await json(response)) as ApprovalDecision | { error?: RpcErrorBody } | null;
  if (!response.ok || !body || !("receipt" in body)) {
    const error = body && "error" in body && body.error ? body.error : { code: "TRANSPORT", message: `HTTP ${response.status}` };
    throw new RpcError(response.status, error);
  }
  return body;
}

/** An approval card (GET /api/approvals/:id): the caller's own request at any status, with
 *  the demo's target (what it acts on, as it was when requested). */
export type ApprovalCardData = ApprovalCard & { target?: ApprovalTarget | null };

export interface ApprovalTarget {
  reference?: string;
  client?: string;
  amount?: number;
  status?: string;
  dueDate?: string;
}

/** The card, or null when it is unknown or another user's (both are 404). */
export async function getApproval(approvalId: string): Promise<ApprovalCardData | null> {
  const response = await fetch(`/api/approvals/${encodeURIComponent(approvalId)}`, { credentials: "same-origin" });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`GET /api/approvals/${approvalId}: HTTP ${response.status}`);
  return (await response.json()) as ApprovalCardData;
}

export interface McpToken {
  token: string;
  tokenType: "Bearer";
  expiresAt: string;
  mcpUrl: string;
}

/** A bearer token for an MCP client, for the signed-in user (POST /api/session/token). */
export async function mcpToken(): Promise<McpToken> {
  const response = await fetch("/api/session/token", { method: "POST", credentials: "same-origin" });
  if (!response.ok) throw new Error(`POST /api/session/token: HTTP ${response.status}`);
  return (await response.json()) as McpToken;
}
