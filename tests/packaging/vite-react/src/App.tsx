// What a new user writes: a todo list the assistant can read and add to, and a button that
// asks the assistant, with @dpas/host, @dpas/host/react and a zod schema for the input.
import { useState } from "react";
import * as z from "zod";
import { EMPTY_INPUT_SCHEMA } from "@dpas/host";
import { SurfaceProvider, useAgentComponent, useConversation } from "@dpas/host/react";

export const AddTodo = z.object({ text: z.string().trim().min(1, "A todo needs text.") });

function Todos() {
  const [todos, setTodos] = useState<string[]>([]);
  useAgentComponent({
    type: "todo.list",
    description: "The user's todo list.",
    observations: [
      {
        name: "read",
        description: "The todos, in order.",
        outputSchema: { type: "object", properties: { todos: { type: "array", items: { type: "string" } } } },
        read: () => ({ todos }),
      },
    ],
    actions: [
      {
        name: "add",
        description: "Add a todo.",
        effect: "local-state",
        inputSchema: AddTodo,
        execute: ({ text }) => {
          setTodos((list) => [...list, text]);
          return { added: text, count: todos.length + 1 };
        },
      },
      {
        name: "clear",
        description: "Remove every todo.",
        effect: "local-state",
        inputSchema: EMPTY_INPUT_SCHEMA,
        execute: () => setTodos([]),
      },
    ],
  });
  return (
    <ul aria-label="Todos">
      {todos.map((todo, i) => (
        <li key={i}>{todo}</li>
      ))}
    </ul>
  );
}

function Assistant({ endpoint }: { endpoint: string }) {
  const { state, conversation } = useConversation({ endpoint, getPathname: () => "/" });
  const last = state.messages.at(-1);
  const calls = state.messages.flatMap((message) => message.toolCalls);
  return (
    <section aria-label="Assistant" aria-busy={state.isRunning} data-tab-role={state.tabRole}>
      <button type="button" disabled={state.isRunning} onClick={() => void conversation.send("Add milk")}>
        Ask
      </button>
      {calls.map((call) => (
        <p key={call.toolCallId} data-testid="tool-call">
          {call.canonicalId}: {call.state}
        </p>
      ))}
      {last?.role === "assistant" && <p data-testid="answer">{last.text}</p>}
      {state.error && <p role="alert">{state.error.message}</p>}
    </section>
  );
}

/** `tabs: false`: every tab runs its own turns (no executor across tabs). */
export function App({ endpoint = "/agent/chat", tabs = true }: { endpoint?: string; tabs?: boolean }) {
  return (
    <SurfaceProvider fallback={<p>Loading…</p>} tabs={tabs}>
      <Todos />
      <Assistant endpoint={endpoint} />
    </SurfaceProvider>
  );
}
