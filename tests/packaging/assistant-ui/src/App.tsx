// A full chat in three lines (useConversation, useDpasRuntime, the provider around <DpasThread>),
// beside a todo list the assistant can add to in this browser.
import { useState } from "react";
import { AssistantRuntimeProvider } from "@assistant-ui/react";
import { SurfaceProvider, useAgentComponent, useConversation } from "@dpas/host/react";
import { DpasThread, useDpasRuntime } from "@dpas/host/assistant-ui";

function Todos() {
  const [todos, setTodos] = useState<string[]>([]);
  useAgentComponent({
    type: "todo.list",
    description: "The user's todo list.",
    actions: [
      {
        name: "add",
        description: "Add a todo.",
        effect: "local-state",
        inputSchema: {
          type: "object",
          properties: { text: { type: "string" } },
          required: ["text"],
          additionalProperties: false,
        },
        execute: (input) => {
          setTodos((list) => [...list, String(input.text)]);
          return { added: input.text };
        },
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

function Chat() {
  const chat = useConversation({ endpoint: "/agent/chat", getPathname: () => location.pathname });
  const runtime = useDpasRuntime(chat);
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <DpasThread welcome={<p>Ask me to add a todo.</p>} />
    </AssistantRuntimeProvider>
  );
}

export function App() {
  return (
    <SurfaceProvider fallback={<p>Loading…</p>}>
      <Todos />
      <section aria-label="Assistant">
        <Chat />
      </section>
    </SurfaceProvider>
  );
}
