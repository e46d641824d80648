// A plain Node script that runs a turn must end by itself, as any Node program does once it
// has nothing left to do: nothing the package opened (timers, message ports, sockets) may keep
// the event loop alive after the turn. The script gets a deadline; past it, it is killed and
// the test fails.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startStub } from "../stub-server.mjs";

const DEADLINE_MS = 20_000;

test("a Node script that runs a turn ends by itself", async () => {
  const stub = await startStub();
  try {
    const script = fileURLToPath(new URL("./turn.mjs", import.meta.url));
    const child = spawn(process.execPath, [script, `${stub.url}/agent/chat`], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    const guard = setTimeout(() => child.kill("SIGKILL"), DEADLINE_MS);
    const [code, signal] = await once(child, "exit");
    clearTimeout(guard);
    assert.equal(signal, null, `still running ${DEADLINE_MS} ms after it started, having printed: ${out}`);
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(out), { status: "completed", todos: ["milk"], answer: 'Added: {"added":"milk"}' });
    assert.equal(stub.requests.length, 2, "the call's result went back to the model");
  } finally {
    await stub.close();
  }
});
