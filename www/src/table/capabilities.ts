// The view capabilities of a table screen (demo README §c.2–c.4), built over the live table
// state. Every callback reads `ref.current`, the table as last rendered.
import type { ActionDef, ComponentDef, JsonSchema, ObservationDef } from "@dpas/host";
import { CapabilityError, EMPTY_INPUT_SCHEMA } from "@dpas/host";
import type { LedgerTable } from "./useLedgerTable";

const MAX_VISIBLE = 100;

const FILTER_FORMATS =
  'Value formats: text = substring; select = one exact listed value; number-range = "min,max" (either side may be empty); date-range = "from,to" as ISO dates (either side may be empty); "" = inactive.';

function columnIds<R extends { id: number }>(t: LedgerTable<R>): string[] {
  return t.spec.columns.filter((c) => !c.pinned).map((c) => c.id);
}

/** Resolves once the table's rows are loaded (see `useTableScreen`); every handler that reads
 *  or checks rows awaits it, so none reports a table that is only loading as empty. */
export type WhenLoaded = (signal: AbortSignal) => Promise<void>;

export function tableCapabilities<R extends { id: number }>(
  ref: { readonly current: LedgerTable<R> },
  rowSchema: JsonSchema,
  whenLoaded: WhenLoaded,
): Pick<ComponentDef, "observations" | "actions"> {
  const spec = ref.current.spec;
  const sortableIds = spec.columns.filter((c) => c.sortable).map((c) => c.id);
  const filterColumns = spec.columns.filter((c) => c.filter);

  const observations: ObservationDef[] = [
    {
      name: "readState",
      description: `The rows on screen in display order (at most ${MAX_VISIBLE}), with the filtered row count, the unfiltered total and the sort. Amounts are in cents.`,
      outputSchema: {
        type: "object",
        properties: {
          visibleRows: { type: "array", items: rowSchema },
          rowCount: { type: "integer" },
          totalRows: { type: "integer" },
          truncated: { type: "boolean" },
          sort: {
            anyOf: [
              {
                type: "object",
                properties: {
                  key: { type: "string" },
                  direction: { type: "string", enum: ["asc", "desc"] },
                },
                required: ["key", "direction"],
              },
              { type: "null" },
            ],
          },
        },
        required: ["visibleRows", "rowCount", "truncated"],
      },
      read: async ({ signal }) => {
        await whenLoaded(signal);
        const t = ref.current;
        return {
          visibleRows: t.rows.slice(0, MAX_VISIBLE).map(t.spec.summary),
          rowCount: t.rows.length,
          totalRows: t.totalRows,
          truncated: t.rows.length > MAX_VISIBLE,
          sort: t.sort ? { key: t.sort.key, direction: t.sort.direction } : null,
        };
      },
    },
    {
      name: "readFilters",
      description: "The toolbar filter values as a flat map; an empty value is inactive.",
      outputSchema: {
        type: "object",
        properties: Object.fromEntries(spec.urlFilters.map((f) => [f.key, { type: "string" }])),
        required: spec.urlFilters.map((f) => f.key),
      },
      read: () => {
        const t = ref.current;
        return Object.fromEntries(
          t.spec.urlFilters.map((f) => [f.key, t.params.get(f.key) ?? f.defaultValue]),
        );
      },
    },
  ];

  if (spec.selection) {
    observations.push({
      name: "readSelection",
      description: "The ids of the selected rows that are still visible (what selection-driven actions use).",
      outputSchema: {
        type: "object",
        properties: {
          selectedIds: { type: "array", items: { type: "integer" } },
          count: { type: "integer" },
        },
        required: ["selectedIds", "count"],
      },
      read: async ({ signal }) => {
        await whenLoaded(signal);
        const ids = ref.current.selectedIds;
        return { selectedIds: ids, count: ids.length };
      },
    });
  }

  observations.push(
    {
      name: "readColumns",
      description: "The movable columns in display order, each with whether it is hidden and whether it can be hidden.",
      outputSchema: {
        type: "array",
        items: {
          type: "object",
          properties: {
            id: { type: "string" },
            label: { type: "string" },
            hidden: { type: "boolean" },
            hideable: { type: "boolean" },
          },
          required: ["id", "label", "hidden", "hideable"],
        },
      },
      read: () => {
        const t = ref.current;
        return t.layout.order.map((id) => {
          const c = t.spec.columns.find((col) => col.id === id)!;
          return { id, label: c.label, hidden: t.layout.hidden.includes(id), hideable: c.hideable !== false };
        });
      },
    },
    {
      name: "readColumnFilters",
      description: "The filterable columns with their kind, current value and, for select columns, the values present in the data.",
      outputSchema: {
        type: "array",
        description: FILTER_FORMATS,
        items: {
          type: "object",
          properties: {
            id: { type: "string" },
            label: { type: "string" },
            kind: { type: "string", enum: ["select", "number-range", "date-range"] },
            value: { type: "string" },
            options: {
              type: "array",
              items: {
                type: "object",
                properties: { value: { type: "string" }, label: { type: "string" } },
                required: ["value", "label"],
              },
            },
          },
          required: ["id", "label", "kind", "value"],
        },
      },
      read: async ({ signal }) => {
        await whenLoaded(signal);
        const t = ref.current;
        return filterColumns.map((c) => ({
          id: c.id,
          label: c.label,
          kind: c.filter!.kind,
          value: t.columnFilters[c.id] ?? "",
          ...(c.filter!.kind === "select" ? { options: t.filterOptions(c.id) } : {}),
        }));
      },
    },
  );

  const actions: ActionDef[] = [
    {
      name: "setFilters",
      description: "Update some of the toolbar filters (keys not mentioned stay as they are, \"\" clears one); mirrored in the URL.",
      effect: "local-state",
      idempotent: true,
      inputSchema: {
        type: "object",
        properties: Object.fromEntries(
          spec.urlFilters.map((f) => [f.key, { type: "string", description: f.description }]),
        ),
        additionalProperties: false,
      },
      execute: (input) => {
        const patch: Record<string, string> = {};
        for (const [key, value] of Object.entries(input)) patch[key] = String(value ?? "");
        ref.current.setUrlFilters(patch);
      },
    },
    {
      name: "setColumnFilters",
      description: 'Update some column filters (columns not mentioned stay, "" clears one). Read readColumnFilters first for the columns, their kinds and the values a select accepts.',
      effect: "local-state",
      idempotent: true,
      inputSchema: {
        type: "object",
        properties: Object.fromEntries(
          filterColumns.map((c) => [
            c.id,
            {
              type: "string",
              description:
                c.filter!.kind === "select"
                  ? `${c.label}: exactly one listed value, or "" to clear.`
                  : c.filter!.kind === "number-range"
                    ? `${c.label} in euros as "min,max"; either side may be empty; "" clears.`
                    : `${c.label} as "from,to" ISO dates; either side may be empty; "" clears.`,
            },
          ]),
        ),
        additionalProperties: false,
      },
      execute: (input) => {
        const patch: Record<string, string> = {};
        for (const [key, value] of Object.entries(input)) patch[key] = String(value ?? "");
        ref.current.setColumnFilters(patch);
      },
    },
    {
      name: "clearFilters",
      description: "Drop every filter: the toolbar filters (closing an open dialog) and all column filters. Sort and selection stay.",
      effect: "local-state",
      idempotent: true,
      inputSchema: EMPTY_INPUT_SCHEMA,
      execute: () => {
        const t = ref.current;
        t.setUrlFilters({}, { clearAll: true });
        t.setColumnFilters({}, { clearAll: true });
      },
    },
    {
      name: "sort",
      description: `Order the rows by one of ${sortableIds.join(", ")}; key null removes the sort.`,
      effect: "local-state",
      idempotent: true,
      inputSchema: {
        type: "object",
        properties: {
          key: { type: ["string", "null"], description: `One of ${sortableIds.join(", ")}, or null.` },
          direction: { type: "string", enum: ["asc", "desc"], default: "desc" },
        },
        required: ["key"],
        additionalProperties: false,
      },
      execute: (input) => {
        const key = input.key as string | null;
        if (key !== null && !sortableIds.includes(key)) {
          throw new CapabilityError(
            "PRECONDITION_FAILED",
            `"${key}" is not a sortable column on this table.`,
            "with-changes",
            { sortableIds },
          );
        }
        const direction = input.direction === "asc" ? "asc" : "desc";
        ref.current.setSort(key === null ? null : { key, direction });
      },
    },
  ];

  if (spec.selection) {
    actions.push({
      name: "selectRows",
      description: "Set the selection wholesale, visible rows only (narrow and re-read first); [] clears. Selection unlocks selection-driven actions.",
      effect: "local-state",
      idempotent: true,
      inputSchema: {
        type: "object",
        properties: { ids: { type: "array", items: { type: "integer" } } },
        required: ["ids"],
        additionalProperties: false,
      },
      execute: async (input, { signal }) => {
        await whenLoaded(signal);
        const t = ref.current;
        const ids = input.ids as number[];
        const visible = new Set(t.rows.map((r) => r.id));
        const missing = ids.filter((id) => !visible.has(id));
        if (missing.length > 0) {
          throw new CapabilityError(
            "PRECONDITION_FAILED",
            `${missing.length} of those ids are not in the visible rows. Adjust the filters, re-read the table, then select.`,
            "with-changes",
            { missingIds: missing.slice(0, 20) },
          );
        }
        t.setSelection([...new Set(ids)]);
      },
    });
  }

  const requireMovable = (id: string) => {
    const ids = columnIds(ref.current);
    if (!ids.includes(id)) {
      throw new CapabilityError(
        "PRECONDITION_FAILED",
        `"${id}" is not a movable column on this table.`,
        "with-changes",
        { columnIds: ids },
      );
    }
  };

  actions.push(
    {
      name: "setColumnVisibility",
      description: "Show or hide one movable column; this changes display only, never the rows.",
      effect: "local-state",
      idempotent: true,
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, hidden: { type: "boolean" } },
        required: ["id", "hidden"],
        additionalProperties: false,
      },
      execute: (input) => {
        const id = String(input.id);
        requireMovable(id);
        const t = ref.current;
        const column = t.spec.columns.find((c) => c.id === id)!;
        if (input.hidden === true && column.hideable === false) {
          throw new CapabilityError("PRECONDITION_FAILED", `"${id}" cannot be hidden on this table.`, "with-changes", {
            columnIds: columnIds(t),
          });
        }
        const hidden = t.layout.hidden.filter((h) => h !== id);
        if (input.hidden === true) hidden.push(id);
        t.setLayout({ order: t.layout.order, hidden });
      },
    },
    {
      name: "moveColumn",
      description: "Move one movable column a single position left or right (at an edge nothing changes).",
      effect: "local-state",
      inputSchema: {
        type: "object",
        properties: { id: { type: "string" }, direction: { type: "string", enum: ["left", "right"] } },
        required: ["id", "direction"],
        additionalProperties: false,
      },
      execute: (input) => {
        const id = String(input.id);
        requireMovable(id);
        const t = ref.current;
        t.setLayout({ order: moveColumn(t.layout.order, id, input.direction === "left" ? -1 : 1), hidden: t.layout.hidden });
      },
    },
  );

  if (spec.assistantReset) {
    actions.push({
      name: "resetView",
      description:
        "Reset this table's search, filters, sort, column layout and selection to their defaults.",
      effect: "local-state",
      confirmation: "required",
      idempotent: true,
      inputSchema: EMPTY_INPUT_SCHEMA,
      execute: () => {
        ref.current.resetView();
      },
    });
  }

  return { observations, actions };
}

export function moveColumn(order: string[], id: string, by: -1 | 1): string[] {
  const index = order.indexOf(id);
  const target = index + by;
  if (index < 0 || target < 0 || target >= order.length) return order;
  const next = [...order];
  [next[index], next[target]] = [next[target]!, next[index]!];
  return next;
}

/** `{type:"object", properties}` from a map of property → JSON type. */
export function objectSchema(properties: Record<string, "integer" | "string" | "boolean">): JsonSchema {
  return {
    type: "object",
    properties: Object.fromEntries(Object.entries(properties).map(([key, type]) => [key, { type }])),
  };
}
