// A component test as an app team writes it: vitest + jsdom in Node, the packed @dpas/host
// initialised by <SurfaceProvider> from the wasm file (no fetch), one turn against a stub server.
import { act, StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import * as z from "zod";
import init, { Surface } from "@dpas/host";
import { SurfaceProvider, useAgentComponent, useSurface } from "@dpas/host/react";
import { startStub } from "../../stub-server.mjs";
import { AddTodo, App } from "./App";

let stub: Awaited<ReturnType<typeof startStub>>;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());

test("using a class before init() says to call init()", () => {
  expect(() => new Surface()).toThrow(/call `await init\(\)`.*SurfaceProvider/s);
});

test("a component registered with useAgentComponent runs the model's call in a turn", async () => {
  const container = document.body.appendChild(document.createElement("div"));
  const root = createRoot(container);
  root.render(
    <StrictMode>
      <App endpoint={`${stub.url}/agent/chat`} />
    </StrictMode>,
  );
  const ask = await vi.waitFor(() => {
    const button = container.querySelector("button");
    if (!button) throw new Error("the provider has not rendered its children yet");
    return button;
  });
  ask.click();
  const answer = await vi.waitFor(
    () => {
      const text = container.querySelector('[data-testid="answer"]')?.textContent ?? "";
      if (!text.startsWith("Added")) throw new Error(`no answer yet: ${container.innerHTML}`);
      return text;
    },
    { timeout: 10_000 },
  );
  // The action ran in the component (its state changed) and its output went back to the model.
  expect([...container.querySelectorAll("li")].map((li) => li.textContent)).toEqual(["milk"]);
  expect(answer).toContain('"added":"milk"');
  expect(container.querySelector('[data-testid="tool-call"]')?.textContent).toBe("view:todo.list.add: done");
  // The first step offered the registered component's tools, once each (StrictMode
  // registered, unregistered and registered again).
  const tools = stub.requests[0].catalog.frontendTools.map((t: { wireName: string }) => t.wireName);
  expect(tools).toEqual(["view_todo__list__read", "view_todo__list__add", "view_todo__list__clear"]);
  // The zod schema went to the model as its JSON Schema.
  expect(stub.requests[0].catalog.frontendTools[1].inputSchema).toEqual(
    z.toJSONSchema(AddTodo, { io: "input", target: "draft-2020-12" }),
  );
  root.unmount();
});

test("init() is idempotent and resolves in Node; a refused duplicate registration warns", async () => {
  await expect(init()).resolves.toBeDefined();
  const surface = new Surface();
  const def = { type: "todo.dup", description: "Twice." };
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  surface.register(def);
  expect(warn).not.toHaveBeenCalled();
  surface.register(def);
  expect(warn).toHaveBeenCalledTimes(1);
  expect(String(warn.mock.calls[0][0])).toContain('refused "todo.dup" (instanceId "default")');
  warn.mockRestore();
  surface.free();
});

test("a zod schema written inline, a new object every render, does not re-register while it says the same", async () => {
  let surface: Surface | undefined;
  let renders = 0;
  function Counter({ limit }: { limit: number }) {
    surface = useSurface();
    renders += 1;
    useAgentComponent({
      type: "counter",
      description: "A counter.",
      actions: [
        {
          name: "set",
          description: "Set the count.",
          effect: "local-state",
          inputSchema: z.object({ count: z.number().int().max(limit) }),
          execute: ({ count }) => count,
        },
      ],
    });
    return <p>{limit}</p>;
  }
  const container = document.body.appendChild(document.createElement("div"));
  const root = createRoot(container);
  const show = (limit: number) => act(() => root.render(<SurfaceProvider><Counter limit={limit} /></SurfaceProvider>));
  show(10);
  await vi.waitFor(() => expect(container.textContent).toBe("10"));
  const registered = surface!.surfaceVersion;
  const before = renders;
  show(10);
  show(10);
  expect(renders).toBe(before + 2);
  expect(surface!.surfaceVersion).toBe(registered);
  // A schema that says something else updates the registration.
  show(20);
  expect(surface!.surfaceVersion).toBe(registered + 1);
  root.unmount();
});
