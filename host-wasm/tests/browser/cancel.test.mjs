// The package's Conversation.cancel() stops the server's step too, in headless Chromium
// against host-server --demo on a model that goes silent mid-step (run-golden.sh starts it).
// Without the server's cancel the step would run on until its 45 s model timeout, and the
// thread would not be stored when the cancel's answer came.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runInPage } from "./chromium.mjs";

const url = process.env.CANCEL_URL;

test("cancel() ends the turn and the server's step, which leaves a stored thread", async () => {
  assert.ok(url, "CANCEL_URL is set by run-golden.sh");
  const { result: { status, storedStatus, stored }, errors } = await runInPage(url, "runCancel");
  assert.deepEqual(errors, []);
  assert.equal(status, "cancelled");
  assert.equal(storedStatus, 200, "the server stored the stopped step");
  const messages = Array.isArray(stored) ? stored : stored.messages;
  assert.equal(messages[0].role, "user");
  const said = JSON.stringify(messages.filter((m) => m.role === "assistant"));
  assert.match(said, /Looking into it/, "the text streamed before the stop is kept");
});
