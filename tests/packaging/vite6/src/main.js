// What the package README shows: init() in a function the app calls (no top-level await, which
// Vite 6's default build target refuses), then a Surface with a registered component.
import init, { Surface } from "@dpas/host";

const status = document.getElementById("status");

async function start() {
  await init();
  const surface = new Surface();
  surface.register({ type: "todo.list", description: "The user's todo list." });
  status.textContent = `ready: surface version ${surface.surfaceVersion}`;
}

start().catch((error) => {
  status.textContent = `failed: ${error}`;
});
