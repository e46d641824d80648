// What must not compile: each `@ts-expect-error` fails the fixture's tsc when the error under
// it goes away, so these pin that a handler's input is typed from its schema, never `any`.
import * as z from "zod";
import { defineAction, Surface } from "@dpas/host";
import { useAgentComponent } from "@dpas/host/react";

const Todo = z.object({ title: z.string(), done: z.boolean().optional() });

export function Todos() {
  useAgentComponent({
    type: "todo.list",
    description: "The todos.",
    actions: [
      {
        name: "add",
        description: "Add a todo.",
        effect: "local-state",
        inputSchema: Todo,
        execute: (input) => {
          // @ts-expect-error `title` is a string
          input.title.toFixed();
          // @ts-expect-error the schema has no `text`
          return input.text;
        },
      },
      {
        name: "toggle",
        description: "Toggle a todo.",
        effect: "local-state",
        inputSchema: Todo,
        execute: (input) => {
          // @ts-expect-error `done` is optional: possibly undefined
          const done: boolean = input.done;
          return done;
        },
      },
      {
        name: "raw",
        description: "A JSON Schema action.",
        effect: "local-state",
        inputSchema: { type: "object" },
        execute: (input) => {
          // @ts-expect-error a JSON Schema's input is JSON of unknown shape, not `any`
          return input.text.toUpperCase();
        },
      },
      {
        name: "annotated",
        description: "A handler annotated against its schema.",
        effect: "local-state",
        inputSchema: Todo,
        // @ts-expect-error the annotation contradicts the schema
        execute: (input: { title: number }) => input.title,
      },
    ],
  });
  return null;
}

export function plain(surface: Surface) {
  surface.register({
    type: "notes",
    description: "Notes.",
    // @ts-expect-error a schema is an object, not a string
    actions: [{ name: "add", description: "Add.", effect: "local-state", inputSchema: "string", execute: () => {} }],
  });
  return defineAction({
    name: "add",
    description: "Add a note.",
    effect: "local-state",
    inputSchema: z.object({ text: z.string() }),
    // @ts-expect-error `text` is a string
    execute: (input) => input.text * 2,
  });
}
