// A shared todo list with an assistant: React, @dpas/host, assistant-ui and examples/todo-server.
import { useCallback, useEffect, useState, type FormEvent } from "react";
import * as z from "zod";
import { AssistantRuntimeProvider } from "@assistant-ui/react";
import { SurfaceProvider, useAgentComponent, useConversation, usePendingConfirmations } from "@dpas/host/react";
import { DpasThread, useDpasRuntime } from "@dpas/host/assistant-ui";

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

// The chat: assistant-ui through @dpas/host/assistant-ui, the recommended way. Tool calls show
// as cards in model order; a server call waiting for an approval gets Approve and Deny
// (useApprovals), then the server's receipt. After a reload the conversation on screen comes
// back (kept per user of this app), its pending approval with it.
function Assistant({ user, refresh }: { user: string; refresh: () => void }) {
  const chat = useConversation({
    endpoint: "/agent/chat", getPathname: () => location.pathname, storageKey: `react-todo conversation of ${user}`,
  });
  const runtime = useDpasRuntime(chat, { onApprovalDecided: refresh });
  useEffect(() => { if (!chat.state.isRunning) refresh(); }, [chat.state.isRunning, refresh]);
  return (
    <section aria-label="Assistant" aria-busy={chat.state.isRunning} data-tab-role={chat.state.tabRole}>
      <AssistantRuntimeProvider runtime={runtime}>
        <DpasThread />
      </AssistantRuntimeProvider>
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
