// A client component as a Next.js or webpack user writes it, without JSX (no loader here).
import { createElement as h, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { EMPTY_INPUT_SCHEMA } from "@dpas/host";
import { SurfaceProvider, useAgentComponent, useSurface } from "@dpas/host/react";

function Counter() {
  const [count, setCount] = useState(0);
  const surface = useSurface();
  useAgentComponent({
    type: "demo.counter",
    description: "A counter.",
    actions: [
      {
        name: "increment",
        description: "Add one.",
        effect: "local-state",
        inputSchema: EMPTY_INPUT_SCHEMA,
        execute: () => setCount((n) => n + 1),
      },
    ],
  });
  // The registry's version, as React state: it moves when the registration lands.
  const version = useSyncExternalStore(
    (listener) => surface.subscribe(listener),
    () => surface.surfaceVersion,
  );
  return h("p", { "data-testid": "status" }, `count ${count}, surface version ${version}`);
}

createRoot(document.getElementById("root")).render(
  h(SurfaceProvider, { fallback: h("p", null, "Loading…") }, h(Counter)),
);
