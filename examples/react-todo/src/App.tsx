// A shared todo list with an assistant: React, @dpas/host and examples/todo-server.
import { useCallback, useEffect, useState, type FormEvent } from "react";
import * as z from "zod";
import { toolCallPhase, type ToolCallView } from "@dpas/host";
import {
  SurfaceProvider, useAgentComponent, useApprovals, useConversation, usePendingConfirmations, type UseApprovalsResult,
} from "@dpas/host/react";

interface Todo { id: number; text: string; done: boolean }

// The inputs the model may send, as zod schemas: it is given their JSON Schema, and each
// handler gets its input validated and typed.
const Show = z.object({ filter: z.enum(["all", "open", "done"]) });
const CompleteTodo = z.object({ id: z.number().int().min(1) });
type Filter = z.infer<typeof Show>["filter"];

async function post(path: string, body: unknown = {}): Promise<any> {
  const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  return (await fetch(path, init)).json();
}

// The server's capabilities over POST /rpc/<id>; a refusal is thrown with its code.
async function rpc(id: string, input: unknown = {}): Promise<unknown> {
  const envelope = await post(`/rpc/${id}`, input);
  if (envelope.status === "ok") return envelope.data;
  throw Object.assign(new Error(envelope.error?.message ?? "Refused."), envelope.error);
}

// A text field and its button: `onSubmit` gets the text, and the field is emptied.
function Field(props: { label: string; button: string; busy?: boolean; onSubmit: (text: string) => unknown }) {
  const [text, setText] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void props.onSubmit(text);
    setText("");
  };
  return (
    <form onSubmit={submit}>
      <input aria-label={props.label} value={text} onChange={(e) => setText(e.target.value)} />
      <button disabled={props.busy || !text.trim()}>{props.button}</button>
    </form>
  );
}

function TodoList({ todos, refresh }: { todos: Todo[]; refresh: () => void }) {
  const [filter, setFilter] = useState<Filter>("all");
  const shown = todos.filter((t) => filter === "all" || t.done === (filter === "done"));
  // What the assistant may do on this screen, while it is mounted. No dependency array:
  // `read` and `execute` always see this render's state.
  useAgentComponent({
    type: "todo.list",
    description: "The shared todo list, as the user sees it.",
    observations: [{ name: "read", description: "The filter and the todos it shows.",
      read: () => ({ filter, todos: shown }) }],
    actions: [{ name: "show", description: "Show all, open or done todos.", effect: "local-state",
      inputSchema: Show, execute: (input) => setFilter(input.filter) }],
    // A server capability the chat reaches only through this screen, after the user confirms.
    procedures: [{ path: "complete-todo", description: "Tick a todo off as done.", effect: "server-mutation",
      confirmation: "required", inputSchema: CompleteTodo }],
  });
  return (
    <section aria-label="Todos">
      <Field label="New todo" button="Add" onSubmit={(text) => rpc("add-todo", { text }).then(refresh)} />
      <ul>{shown.map((t) => <li key={t.id}>{t.done ? <s>{t.text}</s> : t.text}</li>)}</ul>
    </section>
  );
}

// A tool call the model made; one that waits for the user's approval gets Approve and Deny
// (`data-approval` says whether the server's list of pending approvals has it yet).
function ToolCall({ call, approvals, refresh }: { call: ToolCallView; approvals: UseApprovalsResult; refresh: () => void }) {
  const [error, setError] = useState<string>();
  const phase = toolCallPhase(call, { approvals });
  if (phase.phase !== "awaiting-approval" && phase.phase !== "decided") {
    return <div data-testid="tool-call">{call.canonicalId}: {call.state}</div>;
  }
  const decide = (approved: boolean) =>
    (approved ? approvals.approve : approvals.deny)(phase.approvalId).then(refresh, (e: Error) => setError(e.message));
  return (
    <div data-testid="tool-call" data-approval={phase.phase === "decided" ? "decided" : phase.card ? "listed" : "asked"}>
      {call.canonicalId}: {phase.phase === "decided" ? "decided" : "needs your approval"}
      {phase.phase === "awaiting-approval" && <>
        <button disabled={approvals.isDeciding(phase.approvalId)} onClick={() => decide(true)}>Approve</button>{" "}
        <button disabled={approvals.isDeciding(phase.approvalId)} onClick={() => decide(false)}>Deny</button>
      </>}
      {phase.phase === "decided" && phase.decision && <p role="status">{phase.decision.receipt.text}</p>}
      {error && <p role="alert">{error}</p>}
    </div>
  );
}

function Assistant({ user, refresh }: { user: string; refresh: () => void }) {
  // After a reload the conversation on screen comes back (kept per user of this app).
  const { state, conversation } = useConversation({
    endpoint: "/agent/chat", getPathname: () => location.pathname, storageKey: `react-todo conversation of ${user}`,
  });
  const approvals = useApprovals(conversation);
  useEffect(() => { if (!state.isRunning) refresh(); }, [state.isRunning, refresh]);
  return (
    <section aria-label="Assistant" aria-busy={state.isRunning}>
      {state.messages.map((m) => (
        <div key={m.id} className={m.role}>
          {m.parts.map((part, i) =>
            part.type === "tool-call" ? (
              <ToolCall key={part.toolCallId} call={part} approvals={approvals} refresh={refresh} />
            ) : part.type === "text" ? (
              <p key={i}>{part.text}</p>
            ) : null,
          )}
        </div>
      ))}
      {state.error && <p role="alert">{state.error.message}</p>}
      <Field label="Message" button="Send" busy={state.isRunning} onSubmit={(text) => conversation.send(text)} />
    </section>
  );
}

// Browser-side confirmations (`confirmation: "required"`) wait here for the user.
function ConfirmDialog() {
  const [request] = usePendingConfirmations();
  if (!request) return null;
  return (
    <div role="alertdialog" aria-label="Confirm">
      The assistant wants to run {request.canonicalId} {JSON.stringify(request.input)}.
      <button onClick={request.approve}>Allow</button> <button onClick={request.deny}>Deny</button>
    </div>
  );
}

export function App() {
  const [user, setUser] = useState<string | null>(); // undefined while the session is checked
  const [todos, setTodos] = useState<Todo[]>([]);
  const refresh = useCallback(() => void rpc("list-todos").then((list) => setTodos(list as Todo[])), []);
  useEffect(() => {
    fetch("/api/session").then((r) => (r.ok ? r.json() : null)).then((s) => setUser(s?.user.name ?? null));
  }, []);
  if (user === undefined) return null;
  const signIn = (name: string) => post("/api/sign-in", { name }).then((a) => a.user && setUser(a.user.name));
  if (user === null) return <Field label="Your name" button="Sign in" onSubmit={signIn} />;
  return (
    <SurfaceProvider fallback={<p>Loading…</p>} executeProcedure={(path, input) => rpc(path, input)}>
      <h1>Todos, signed in as {user}</h1>
      <TodoList todos={todos} refresh={refresh} />
      <Assistant user={user} refresh={refresh} />
      <ConfirmDialog />
    </SurfaceProvider>
  );
}
