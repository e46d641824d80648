// README.md's quick start, verbatim (scripts/check-docs.test.mjs compares them): the fixture's
// strict tsc checks it, so the snippet stays true to the package's types.
import { useState } from "react";
import { SurfaceProvider, useAgentComponent, useConversation } from "@dpas/host/react";

type Card = { id: string; title: string; column: string };

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
        outputSchema: { type: "object" },
        read: () => ({ cards }),
      },
    ],
    actions: [
      {
        name: "moveCard",
        description: "Move a card to another column.",
        effect: "local-state",
        inputSchema: {
          type: "object",
          properties: { id: { type: "string" }, column: { enum: ["todo", "doing", "done"] } },
          required: ["id", "column"],
          additionalProperties: false,
        },
        execute: (input) => {
          setCards((all) => all.map((c) => (c.id === input.id ? { ...c, column: String(input.column) } : c)));
          return { moved: input.id, to: input.column };
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
