// The golden turn in headless Chromium: the @dpas/host package, loaded by a page that
// host-server --demo serves itself (same origin: the session cookie works as in the app),
// runs a whole turn against the scripted model with a minimal table surface.
// Needs GOLDEN_URL (the server, started by run-golden.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { runInPage } from "./chromium.mjs";

const url = process.env.GOLDEN_URL;

test("the golden turn ends with the overdue total", async () => {
  assert.ok(url, "GOLDEN_URL is set by run-golden.sh");
  const { result: { result, events, frames, filters }, errors } = await runInPage(url, "runGolden");
  assert.deepEqual(errors, []);
  assert.equal(result.status, "completed", JSON.stringify(result.error));
  assert.deepEqual(filters, { due: "overdue" });

  // Three steps: ageing + setFilters, readState, the answer.
  assert.equal(events.filter((e) => e === "step-start").length, 3);
  assert.ok(events.includes("tool-call:server:domain_collections-aging"), events.join(" "));
  assert.ok(events.includes("tool-result:browser:view_invoices__pending__setFilters"));
  assert.ok(events.includes("tool-result:browser:view_invoices__pending__readState"));
  assert.equal(frames.filter((f) => f === "step-finish").length, 3);

  // The history answers every call, and readState sent the 7 overdue rows.
  const toolParts = result.messages.filter((m) => m.role === "tool").flatMap((m) => m.content);
  const read = toolParts.find((p) => p.toolName === "view_invoices__pending__readState");
  assert.equal(read.output.value.rowCount, 7);
  assert.deepEqual(read.output.value.visibleRows.map((r) => r.id), [18, 21, 1, 2, 8, 3, 13]);
  const callIds = result.messages.filter((m) => m.role === "assistant" && Array.isArray(m.content))
    .flatMap((m) => m.content).filter((p) => p.type === "tool-call").map((p) => p.toolCallId);
  assert.deepEqual(callIds.filter((id) => !toolParts.some((p) => p.toolCallId === id)), []);

  const last = result.messages.at(-1);
  assert.equal(last.role, "assistant");
  const text = (typeof last.content === "string" ? last.content
    : last.content.filter((p) => p.type === "text").map((p) => p.text).join("")).replaceAll("**", "");
  assert.match(text, /^7 invoices are overdue, worth €102,600\./);
  assert.equal(result.usage.reportedSteps, 3);
});
