// README.md's quick start, verbatim (scripts/check-docs.test.mjs compares them): the fixture's
// strict tsc checks it, so the snippet stays true to the package's types.
import { useState } from "react";
import * as z from "zod";
import { SurfaceProvider, useAgentComponent, useConversation } from "@dpas/host/react";

const Column = z.enum(["todo", "doing", "done"]);
type Card = { id: string; title: string; column: z.infer<typeof Column> };

function Board() {
  const [cards, setCards] = useState<Card[]>([
    { id: "c1", title: "Write the docs", column: "todo" },
    { id: "c2", title: "Ship it", column: "doing" },
  ]);
  useAgentComponent({
    type: "kanban.board",
    description: "The kanban board on screen: cards in the columns todo, doing and done.",
    observations: [
      {
        name: "read",
        description: "Every card on the board, with its column.",
        read: () => ({ cards }),
      },
    ],
    actions: [
      {
        name: "moveCard",
        description: "Move a card to another column.",
        effect: "local-state",
        // The model gets the schema as JSON Schema; `execute` gets the input zod validated, typed.
        inputSchema: z.object({ id: z.string(), column: Column }),
        execute: ({ id, column }) => {
          setCards((all) => all.map((c) => (c.id === id ? { ...c, column } : c)));
          return { moved: id, to: column };
        },
      },
    ],
  });
  return (
    <ul>
      {cards.map((c) => (
        <li key={c.id}>
          {c.title}: {c.column}
        </li>
      ))}
    </ul>
  );
}

function Assistant() {
  const { state, conversation } = useConversation({
    endpoint: "/agent/chat",
    getPathname: () => location.pathname,
  });
  const [text, setText] = useState("");
  return (
    <aside>
      {state.messages.map((m) => (
        <p key={m.id}>
          <b>{m.role}:</b> {m.text}
        </p>
      ))}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void conversation.send(text);
          setText("");
        }}
      >
        <input value={text} onChange={(e) => setText(e.target.value)} disabled={state.isRunning} />
      </form>
      {state.error && <p role="alert">{state.error.message}</p>}
    </aside>
  );
}

export function App() {
  return (
    <SurfaceProvider fallback={<p>Loading…</p>}>
      <Board />
      <Assistant />
    </SurfaceProvider>
  );
}
