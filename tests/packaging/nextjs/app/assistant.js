"use client";
// The README's Next.js recipe: @dpas/host only in a client component, initialised by
// <SurfaceProvider> in the browser (prerendering renders its fallback), never by a top-level init().
import { useEffect, useState } from "react";
import { SurfaceProvider, useAgentComponent, useSurface } from "@dpas/host/react";

function Todos() {
  const [todos] = useState(["milk"]);
  useAgentComponent({
    type: "todo.list",
    description: "The user's todo list.",
    observations: [
      { name: "read", description: "The todos.", outputSchema: { type: "object" }, read: () => ({ todos }) },
    ],
  });
  const surface = useSurface();
  const [version, setVersion] = useState();
  // After useAgentComponent's own effect has registered the component.
  useEffect(() => setVersion(surface.surfaceVersion), [surface]);
  return <p id="status">{version === undefined ? "starting" : `ready: surface version ${version}`}</p>;
}

export function Assistant() {
  return (
    <SurfaceProvider fallback={<p id="status">loading</p>}>
      <Todos />
    </SurfaceProvider>
  );
}
