import { usePageTitle } from "./usePageTitle";

export function Architecture() {
  usePageTitle("/architecture");
  return (
    <section className="screen prose">
      <h1>How this works</h1>
      <p>
        This app is a receivables ledger with an assistant that can both call the server's governed
        procedures and operate the screen you are looking at.
      </p>
      <ol>
        <li>
          <strong>Two planes of tools.</strong> Domain capabilities (<code>domain:list-invoices</code>,{" "}
          <code>domain:issue-invoice</code>, …) run on the server, under its policies: an analyst never sees a
          write, and issuing or deleting an invoice waits for your approval. View capabilities (
          <code>view:invoices.pending.setFilters</code>, <code>view:app.navigation.goTo</code>, …) run in this
          browser, registered by the components that are mounted right now.
        </li>
        <li>
          <strong>One step loop in the browser.</strong> The <code>@dpas/host</code> package (Rust compiled to
          WebAssembly) sends the conversation and the live view catalog to <code>POST /agent/chat</code>, reads
          the NDJSON frames it streams back, runs the browser calls against the screen, waits for the screen to
          settle, and continues until the model answers.
        </li>
        <li>
          <strong>Contextual references.</strong> The chase dialog offers{" "}
          <code>domain:update-collection-status</code> bound to the invoice on screen: the model cannot choose
          another invoice, and the reference exists only while the dialog is open.
        </li>
        <li>
          <strong>Reconciliation.</strong> After any successful write, by you, the assistant or an approval, the
          screens reload their data.
        </li>
      </ol>
      <p>
        Open the inspector in the assistant panel to watch every frame, tool call and settle-wait of a turn.
      </p>
    </section>
  );
}
