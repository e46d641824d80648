// A minimal app on @dpas/host: the pending-invoices table's `setFilters` and `readState`,
// answering like the demo table, and one turn against the real /agent/chat.
import init, { Surface, runTurn } from "/pkg/dpas_host.js";
import { signIn } from "/session.js";

// The 7 overdue rows of the demo's 13 pending invoices, as the demo table shows them with
// `due: "overdue"` (sorted by days overdue, descending): the reference's step-2 readState.
// This minimal table models only that filter; unfiltered it shows nothing.
const TOTAL_ROWS = 13;
const OVERDUE = [
  { id: 18, reference: "DUN-0037", client: "Dunmore Civic Trust", amount: 2675000, dueDate: "2026-10-02", daysOverdue: 58, remindersSent: 1 },
  { id: 21, reference: "EVL-0084", client: "Everline Health", amount: 780000, dueDate: "2026-10-20", daysOverdue: 40, remindersSent: 0 },
  { id: 1, reference: "AUR-0134", client: "Aurora Labs", amount: 2150000, dueDate: "2026-11-06", daysOverdue: 23, remindersSent: 2 },
  { id: 2, reference: "AUR-0136", client: "Aurora Labs", amount: 1840000, dueDate: "2026-11-15", daysOverdue: 14, remindersSent: 0 },
  { id: 8, reference: "BWF-0064", client: "Bellweather Foods", amount: 615000, dueDate: "2026-11-17", daysOverdue: 12, remindersSent: 0 },
  { id: 3, reference: "AUR-0137", client: "Aurora Labs", amount: 960000, dueDate: "2026-11-21", daysOverdue: 8, remindersSent: 0 },
  { id: 13, reference: "CBL-0207", client: "Cobalt Logistics", amount: 1240000, dueDate: "2026-11-23", daysOverdue: 6, remindersSent: 0 },
];

const ROUTE_SCOPES = {
  "/receivables/pending": ["invoices", "reporting", "collections"],
  "/receivables/all": ["invoices", "reporting"],
  "/receivables/clients": ["clients", "invoices"],
  "/architecture": ["app"],
};

const ROW_SCHEMA = {
  type: "object",
  properties: {
    visibleRows: { type: "array", items: { type: "object" } },
    rowCount: { type: "integer" },
    totalRows: { type: "integer" },
    truncated: { type: "boolean" },
    sort: { type: "object" },
  },
  required: ["visibleRows", "rowCount", "totalRows", "truncated", "sort"],
};

window.runGolden = async () => {
  await init();
  await signIn();

  let filters = {};
  const surface = new Surface();
  surface.register({
    type: "invoices.pending",
    description: "The pending invoices table.",
    observations: [{
      name: "readState",
      description: "The rows currently visible in this table, in view order (at most 100), with the row counts and the active sort. Read this before acting on rows.",
      outputSchema: ROW_SCHEMA,
      read: () => {
        const visibleRows = filters.due === "overdue" ? OVERDUE : [];
        return { visibleRows, rowCount: visibleRows.length, totalRows: TOTAL_ROWS, truncated: false, sort: { key: "days_overdue", direction: "desc" } };
      },
    }],
    actions: [{
      name: "setFilters",
      description: "Narrow this table by due state.",
      effect: "local-state",
      inputSchema: {
        type: "object",
        properties: { due: { type: "string", enum: ["overdue", "due-soon", "all"] } },
        additionalProperties: false,
      },
      // Async, like a router/state update that commits later.
      execute: async (input) => { await null; filters = { ...filters, ...input }; surface.notifyAvailabilityChanged(); },
    }],
  });

  const events = [];
  const frames = [];
  const result = await runTurn({
    endpoint: "/agent/chat",
    surface,
    conversationId: "cnv_golden_" + Math.random().toString(36).slice(2, 10),
    messages: [{ role: "user", content: "Which invoices are overdue, and by how much?" }],
    pathname: location.pathname,
    routeScopes: ROUTE_SCOPES,
    modelId: "scripted",
    onFrame: (frame) => frames.push(frame.type),
    onEvent: (event) => events.push(event.type === "tool-call" || event.type === "tool-result"
      ? `${event.type}:${event.executor}:${event.wireName}` : event.type),
  });
  return { result, events, frames, filters };
};
