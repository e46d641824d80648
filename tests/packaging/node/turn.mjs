// A plain Node script on the packed @dpas/host, as a user writes one (a CLI, a job, an eval):
// a todo list registered on a Surface, one turn against the endpoint in argv, its outcome
// printed as JSON. Nothing here ends the process: it must end by itself after the turn.
import init, { Conversation, Surface } from "@dpas/host";

const endpoint = process.argv[2];
await init();
const surface = new Surface();
const todos = [];
surface.register({
  type: "todo.list",
  description: "The user's todo list.",
  actions: [
    {
      name: "add",
      description: "Add a todo.",
      effect: "local-state",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
      execute: ({ text }) => {
        todos.push(text);
        return { added: text };
      },
    },
  ],
});
const conversation = new Conversation({ surface, endpoint, getPathname: () => "/" });
const result = await conversation.send("Add milk to my list");
const answer = conversation.getState().messages.at(-1)?.text;
console.log(JSON.stringify({ status: result.status, todos, answer }));
