// Capabilities typed by zod 4 schemas, as a new user writes them: every handler's input is
// typed from its own schema with no cast and no annotation, under the fixture's strict tsc
// (`strict`, `skipLibCheck: false`). rejects.tsx holds what must not compile.
import { useState } from "react";
import * as z from "zod";
import { defineAction, EMPTY_INPUT_SCHEMA, Surface, type ActionDef, type ComponentDef } from "@dpas/host";
import { useAgentComponent } from "@dpas/host/react";

const Card = z.object({ id: z.string(), title: z.string(), column: z.enum(["todo", "doing", "done"]) });
type Card = z.infer<typeof Card>;

export function Board() {
  const [cards, setCards] = useState<Card[]>([]);
  useAgentComponent({
    type: "kanban.board",
    description: "The kanban board.",
    // An observation needs no outputSchema; a zod one is accepted too.
    observations: [
      { name: "read", description: "The cards.", read: () => ({ cards }) },
      { name: "count", description: "How many cards.", outputSchema: z.object({ count: z.number() }), read: () => ({ count: cards.length }) },
    ],
    actions: [
      {
        name: "addCard",
        description: "Add a card.",
        effect: "local-state",
        inputSchema: z.object({ title: z.string().min(1), column: Card.shape.column.default("todo") }),
        // The handler gets zod's output: `column` is filled in by its default.
        execute: (input, { signal }) => {
          const card: Card = { id: String(cards.length + 1), title: input.title.toUpperCase(), column: input.column };
          if (!signal.aborted) setCards((all) => [...all, card]);
          return { added: card.id };
        },
      },
      {
        name: "moveCard",
        description: "Move a card to another column.",
        effect: "local-state",
        inputSchema: Card.pick({ id: true, column: true }),
        execute: ({ id, column }) => setCards((all) => all.map((c) => (c.id === id ? { ...c, column } : c))),
      },
      {
        name: "tag",
        description: "Tag cards.",
        effect: "local-state",
        inputSchema: z.object({ ids: z.array(z.string()), tag: z.string().nullable(), urgent: z.boolean().optional() }),
        outputSchema: z.object({ tagged: z.number() }),
        execute: async (input) => ({ tagged: input.ids.filter((id) => id.startsWith(input.tag ?? "")).length + (input.urgent ? 1 : 0) }),
      },
      // A plain JSON Schema still works: the input is a JSON object.
      {
        name: "clear",
        description: "Remove every card.",
        effect: "local-state",
        inputSchema: EMPTY_INPUT_SCHEMA,
        execute: (input) => setCards(Object.keys(input).length === 0 ? [] : cards),
      },
    ],
    procedures: [
      {
        path: "archive-card",
        description: "Archive a card on the server.",
        effect: "server-mutation",
        inputSchema: z.object({ id: z.string() }),
        bind: () => ({ id: cards[0]?.id ?? "" }),
      },
    ],
  });
  return <p>{cards.length}</p>;
}

// Without React: register and update infer the same way.
export function registerPlain(surface: Surface) {
  const Note = z.object({ text: z.string() });
  const handle = surface.register({
    type: "notes",
    description: "Notes.",
    actions: [{ name: "add", description: "Add a note.", effect: "local-state", inputSchema: Note, execute: (note) => note.text.trim() }],
  });
  handle.update({
    type: "notes",
    description: "Notes.",
    actions: [{ name: "add", description: "Add a note.", effect: "local-state", inputSchema: Note, execute: (note) => note.text.length }],
  });
  return handle;
}

// A definition written apart from the call: defineAction types it, and it fits ComponentDef.
export const rename = defineAction({
  name: "rename",
  description: "Rename the board.",
  effect: "local-state",
  inputSchema: z.object({ name: z.string().max(40) }),
  execute: (input) => input.name.toLowerCase(),
});
export const actions: ActionDef[] = [rename];
export const definition: ComponentDef = { type: "board.header", description: "The board's header.", actions: [rename] };

// An action added conditionally (a spread) is typed through defineAction.
export function Conditional({ admin }: { admin: boolean }) {
  useAgentComponent({
    type: "board.admin",
    description: "The board's admin tools.",
    actions: [
      rename,
      ...(admin
        ? [
            defineAction({
              name: "purge",
              description: "Delete old cards.",
              effect: "local-state",
              inputSchema: z.object({ olderThanDays: z.number().int().min(1) }),
              execute: ({ olderThanDays }) => olderThanDays.toFixed(0),
            }),
          ]
        : []),
    ],
  });
  return null;
}
