// A browser confirmation outlives a reload: the model asks for a confirmation-required view
// action, the page reloads while the dialog is open, and the restored thread asks again; allowing
// it runs the action once and the turn goes on to its answer.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openApp, recordRequests, scriptedSuite, waitForText } from "./harness.mjs";

const RULES = {
  turns: [
    {
      when: { lastUserContains: "Reset the table", lacksResult: "view:invoices.all.resetView" },
      toolCalls: [{ name: "view:invoices.all.resetView", input: {} }],
    },
    { when: { lastUserContains: "Reset the table" }, text: ["The table is back to its defaults."] },
    { when: {}, text: ["Still here."] },
  ],
};

const suite = scriptedSuite(RULES, { before, after });

describe("a confirmation and a reload", () => {
  test("the dialog comes back after a reload, and allowing it finishes the turn", async () => {
    const { context, page, errors } = await openApp(suite.browser, suite.server.url, { role: "controller", path: "/receivables/all" });
    try {
      const dialog = page.getByRole("alertdialog", { name: "Allow this action?" });
      await page.getByRole("textbox", { name: "Message" }).fill("Reset the table, please.");
      await page.getByRole("button", { name: "Send" }).click();
      await dialog.getByText("view:invoices.all.resetView").waitFor();

      await page.reload();
      await page.getByRole("heading", { name: "All invoices" }).waitFor();
      const requests = recordRequests(page);
      // Restored with the call unanswered: the same question, asked again.
      await dialog.getByText("view:invoices.all.resetView").waitFor();
      await dialog.getByRole("button", { name: "Allow" }).click();
      await waitForText(page, "The table is back to its defaults.");

      assert.equal(requests.length, 1, "one step after the reload: the answered call, then the model's text");
      const last = requests[0].messages.at(-1);
      assert.equal(last.role, "tool");
      assert.equal(last.content[0].toolName, "view_invoices__all__resetView");
      assert.deepEqual(last.content[0].output.value, { done: true });
      assert.equal(await dialog.count(), 0, "nothing is left to confirm");
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
