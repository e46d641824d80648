// Capabilities typed by a Standard Schema (zod 4; ArkType and Valibot too) on the packed
// @dpas/host, as a Node script writes them: the model's input is validated by the schema before the handler runs, the handler
// gets the parsed value, a failed validation is the tool result INVALID_INPUT the model can
// retry with, and a Standard Schema that cannot give its JSON Schema is refused at registration.
import assert from "node:assert/strict";
import { test } from "node:test";
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import * as v from "valibot";
import * as z from "zod";
import init, { Conversation, Surface } from "@dpas/host";
import { startStub } from "../stub-server.mjs";

await init();

// `trim` changes the value; `refine` is a rule JSON Schema cannot say, so only zod checks it.
const AddTodo = z.object({
  text: z
    .string()
    .trim()
    .min(1)
    .refine((text) => text !== "forbidden", "That todo is not allowed."),
});

/** One turn in which the stub's model calls todo.list.add with `input`. */
async function turn(input, inputSchema = AddTodo) {
  const stub = await startStub({ input });
  const surface = new Surface();
  const calls = [];
  try {
    const handle = surface.register({
      type: "todo.list",
      description: "The user's todo list.",
      observations: [{ name: "read", description: "The todos.", read: () => ({ todos: calls }) }],
      actions: [
        {
          name: "add",
          description: "Add a todo.",
          effect: "local-state",
          inputSchema,
          execute: (todo) => {
            calls.push(todo);
            return { added: todo.text };
          },
        },
      ],
    });
    const conversation = new Conversation({ surface, endpoint: `${stub.url}/agent/chat`, getPathname: () => "/" });
    const result = await conversation.send("Add a todo");
    const [toolMessage] = stub.requests[1].messages.filter((m) => m.role === "tool");
    conversation.free();
    handle.unregister();
    return { status: result.status, calls, output: toolMessage.content[0].output };
  } finally {
    surface.free();
    await stub.close();
  }
}

test("a valid input reaches the handler as the schema parsed it", async () => {
  const { status, calls, output } = await turn({ text: "  milk  " });
  assert.equal(status, "completed");
  assert.deepEqual(calls, [{ text: "milk" }]);
  assert.deepEqual(output.value, { added: "milk" });
});

test("an input the schema refuses is INVALID_INPUT with its issues, and the handler is not called", async () => {
  const { status, calls, output } = await turn({ text: "forbidden" });
  assert.equal(status, "completed");
  assert.deepEqual(calls, []);
  const { error } = output.value;
  assert.equal(error.code, "INVALID_INPUT", JSON.stringify(output));
  assert.equal(error.retry, "with-changes");
  assert.deepEqual(error.details, { issues: [{ path: "/text", message: "That todo is not allowed." }] });
  // The same answer as the registry's own check against the converted JSON Schema gives.
  const typeError = (await turn({ text: 42 })).output.value.error;
  assert.equal(typeError.code, "INVALID_INPUT");
  assert.equal(error.message, typeError.message);
  assert.equal(error.retry, typeError.retry);
  assert.deepEqual(Object.keys(typeError.details.issues[0]), ["path", "message"]);
});

test("ArkType's schemas (functions) and Valibot's, wrapped by toStandardJsonSchema, work the same way", async () => {
  const Ark = type({ text: "string > 0" });
  assert.equal(typeof Ark, "function");
  const ark = await turn({ text: "milk" }, Ark);
  assert.deepEqual(ark.calls, [{ text: "milk" }]);
  const arkRefused = await turn({ text: "" }, Ark);
  assert.deepEqual(arkRefused.calls, []);
  assert.equal(arkRefused.output.value.error.code, "INVALID_INPUT");
  const valibot = toStandardJsonSchema(v.object({ text: v.pipe(v.string(), v.minLength(1)) }));
  const val = await turn({ text: "milk" }, valibot);
  assert.deepEqual(val.calls, [{ text: "milk" }]);
  // Valibot's converter refuses what JSON Schema cannot say (a trim), at registration.
  const trimmed = toStandardJsonSchema(v.object({ text: v.pipe(v.string(), v.trim()) }));
  await assert.rejects(turn({ text: "milk" }, trimmed), (error) => {
    assert.equal(error.code, "UNSUPPORTED_SCHEMA");
    assert.match(error.message, /ActionDef "todo\.list\.add" inputSchema: valibot could not convert it to JSON Schema/);
    return true;
  });
});

test("the JSON Schema on the wire is the schema's own, converted once per schema object", async () => {
  let conversions = 0;
  const standard = AddTodo["~standard"];
  const counted = {
    "~standard": {
      ...standard,
      jsonSchema: {
        input: (options) => (conversions++, standard.jsonSchema.input(options)),
        output: (options) => standard.jsonSchema.output(options),
      },
    },
  };
  const surface = new Surface();
  const def = (i) => ({
    type: `todo.list${i}`,
    description: "A todo list.",
    actions: [{ name: "add", description: "Add a todo.", effect: "local-state", inputSchema: counted, execute: () => {} }],
  });
  for (const i of [1, 2]) surface.register(def(i)).update(def(i));
  surface.free();
  assert.equal(conversions, 1);
});

test("a Standard Schema without ~standard.jsonSchema is refused at registration, saying what to pass", () => {
  const surface = new Surface();
  const noConverter = { "~standard": { version: 1, vendor: "valibot", validate: (value) => ({ value }) } };
  try {
    assert.throws(
      () =>
        surface.register({
          type: "todo.list",
          description: "The user's todo list.",
          actions: [{ name: "add", description: "Add a todo.", effect: "local-state", inputSchema: noConverter, execute: () => {} }],
        }),
      (error) => {
        assert.equal(error.code, "UNSUPPORTED_SCHEMA");
        assert.match(error.message, /ActionDef "todo\.list\.add" inputSchema is a Standard Schema of valibot/);
        assert.match(error.message, /toStandardJsonSchema/);
        assert.match(error.message, /pass a JSON Schema/);
        return true;
      },
    );
    assert.equal(surface.surfaceVersion, 0, "nothing was registered");
  } finally {
    surface.free();
  }
});
