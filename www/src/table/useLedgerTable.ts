// One table screen's state: URL filters and sort, column filters, column layout and row
// selection, over @tanstack/react-table. Every write to the URL replaces the history entry.
import { useCallback, useMemo, useRef, useState, type ReactNode } from "react";
import { useNavigate, useSearchParams } from "react-router";
import {
  getCoreRowModel,
  getSortedRowModel,
  useReactTable,
  type ColumnDef,
  type Row,
  type SortingState,
  type Table,
} from "@tanstack/react-table";
import { compareValues, formatSort, nextSort, parseSort, type SortState, type SortValue } from "./sorting";
import { matchesFilter, matchesSearch, type FilterKind } from "./filters";

export interface Option {
  value: string;
  label: string;
}

export interface ColumnSpec<R> {
  id: string;
  label: string;
  /** Pinned left: never moved, never hidden. */
  pinned?: boolean;
  sortable: boolean;
  hideable?: boolean;
  hiddenByDefault?: boolean;
  numeric?: boolean;
  sortValue?: (row: R) => SortValue;
  cell: (row: R) => ReactNode;
  filter?: {
    kind: FilterKind;
    /** The value the filter compares (amounts in euros). */
    value: (row: R) => string | number;
    /** A fixed option list; otherwise the distinct values of the unfiltered rows. */
    options?: Option[];
  };
}

export interface UrlFilterSpec {
  key: string;
  defaultValue: string;
  description: string;
}

export interface TableSpec<R extends { id: number }> {
  /** Component type on the surface, e.g. "invoices.pending". */
  type: string;
  description: string;
  ariaLabel: string;
  storageKey: string;
  rowAttr: "data-invoice-row" | "data-client-row";
  columns: ColumnSpec<R>[];
  defaultSort: SortState;
  /** Toolbar filters kept in the URL; `q` first. */
  urlFilters: UrlFilterSpec[];
  search: (row: R) => string;
  /** Extra narrowing by URL params (the pending screen's `due`). */
  narrow?: (rows: R[], params: URLSearchParams) => R[];
  summary: (row: R) => Record<string, unknown>;
  selection: boolean;
  /** The checkbox label's subject, e.g. the reference. */
  rowLabel: (row: R) => string;
  /** Offer the assistant `resetView` (asks the user to confirm first). Off on the pending
   *  screen, whose catalog is pinned to the reference's 16 descriptors. */
  assistantReset?: boolean;
}

export interface Layout {
  order: string[];
  hidden: string[];
}

export interface LedgerTable<R extends { id: number }> {
  spec: TableSpec<R>;
  table: Table<R>;
  /** Rows after filters and sort, in display order. */
  rows: R[];
  totalRows: number;
  loaded: boolean;
  params: URLSearchParams;
  sort: SortState | null;
  columnFilters: Record<string, string>;
  layout: Layout;
  selectedIds: number[];
  allRows: R[];
  filterOptions: (columnId: string) => Option[];
  setUrlFilters: (patch: Record<string, string>, opts?: { clearAll?: boolean }) => void;
  setSort: (sort: SortState | null) => void;
  cycleSort: (key: string) => void;
  setColumnFilters: (patch: Record<string, string>, opts?: { clearAll?: boolean }) => void;
  setLayout: (layout: Layout) => void;
  setSelection: (ids: number[]) => void;
  /** Search, toolbar filters, sort, column filters, column layout (URL and remembered) and
   *  selection back to their defaults, in one history replacement. */
  resetView: () => void;
}

function movable<R>(columns: ColumnSpec<R>[]): ColumnSpec<R>[] {
  return columns.filter((c) => !c.pinned);
}

function defaultLayout<R>(columns: ColumnSpec<R>[]): Layout {
  const m = movable(columns);
  return { order: m.map((c) => c.id), hidden: m.filter((c) => c.hiddenByDefault).map((c) => c.id) };
}

/** A layout from `cols=a,-b,c` (a `-` marks a hidden column); null when absent or invalid. */
function parseLayout<R>(raw: string | null, columns: ColumnSpec<R>[]): Layout | null {
  if (!raw) return null;
  const ids = movable(columns).map((c) => c.id);
  const order: string[] = [];
  const hidden: string[] = [];
  for (const part of raw.split(",")) {
    const id = part.startsWith("-") ? part.slice(1) : part;
    if (!ids.includes(id) || order.includes(id)) return null;
    order.push(id);
    if (part.startsWith("-")) hidden.push(id);
  }
  for (const id of ids) if (!order.includes(id)) order.push(id);
  return { order, hidden };
}

function formatLayout<R>(layout: Layout, columns: ColumnSpec<R>[]): string | null {
  const fallback = defaultLayout(columns);
  const same =
    layout.order.join(",") === fallback.order.join(",") &&
    [...layout.hidden].sort().join(",") === [...fallback.hidden].sort().join(",");
  if (same) return null;
  return layout.order.map((id) => (layout.hidden.includes(id) ? `-${id}` : id)).join(",");
}

function storedLayout<R>(key: string, columns: ColumnSpec<R>[]): Layout | null {
  try {
    return parseLayout(window.localStorage.getItem(key), columns);
  } catch {
    return null;
  }
}

export function useLedgerTable<R extends { id: number }>(
  spec: TableSpec<R>,
  data: R[] | undefined,
): LedgerTable<R> {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [columnFilters, setColumnFilterState] = useState<Record<string, string>>({});
  const allRows = useMemo(() => data ?? [], [data]);

  /** Applies `mutate` to the search params as they are in the window right now. */
  const writeParams = useCallback(
    (mutate: (p: URLSearchParams) => void) => {
      const next = new URLSearchParams(window.location.search);
      mutate(next);
      // Commas are legal in a query string; keep `sel=1,2` and `cols=a,-b` readable.
      const search = next.toString().replace(/%2C/gi, ",");
      navigate(
        { pathname: window.location.pathname, search: search ? `?${search}` : "" },
        { replace: true },
      );
    },
    [navigate],
  );

  const sortableIds = spec.columns.filter((c) => c.sortable).map((c) => c.id);
  const sort = parseSort(params.get("sort"), sortableIds, spec.defaultSort);
  const layout =
    parseLayout(params.get("cols"), spec.columns) ??
    storedLayout(spec.storageKey, spec.columns) ??
    defaultLayout(spec.columns);

  const filtered = useMemo(() => {
    const q = params.get("q") ?? "";
    let rows = allRows.filter((r) => matchesSearch(q, spec.search(r)));
    if (spec.narrow) rows = spec.narrow(rows, params);
    for (const column of spec.columns) {
      const value = columnFilters[column.id];
      if (!column.filter || !value) continue;
      const f = column.filter;
      rows = rows.filter((r) => matchesFilter(f.kind, value, f.value(r)));
    }
    return rows;
  }, [allRows, params, columnFilters, spec]);

  const columns = useMemo<ColumnDef<R>[]>(() => {
    const defs: ColumnDef<R>[] = spec.columns.map((c) => ({
      id: c.id,
      header: c.label,
      accessorFn: (row: R) => (c.sortValue ? c.sortValue(row) : null),
      enableSorting: c.sortable,
      enableHiding: !c.pinned && c.hideable !== false,
      sortingFn: (a: Row<R>, b: Row<R>, id: string) =>
        compareValues(a.getValue<SortValue>(id), b.getValue<SortValue>(id)),
      cell: (info) => c.cell(info.row.original),
    }));
    if (spec.selection) {
      defs.unshift({ id: "select", header: "", enableSorting: false, enableHiding: false });
    }
    return defs;
  }, [spec]);

  // Table state objects keep their identity while their content is unchanged: TanStack
  // Table memoises its row models on them (and a changed model re-renders).
  const selParam = params.get("sel") ?? "";
  const selectedFromUrl = useMemo(
    () =>
      selParam
        .split(",")
        .map((s) => Number(s))
        .filter((n) => Number.isInteger(n) && n > 0),
    [selParam],
  );
  const rowSelection = useMemo(
    () => Object.fromEntries(selectedFromUrl.map((id) => [String(id), true])),
    [selectedFromUrl],
  );
  // `sort` and `layout` are parsed from the URL on every render: the memos key on their
  // serialised value, and rebuild from it, so a new object with the same content keeps them.
  const sortKey = JSON.stringify(sort);
  const sorting = useMemo<SortingState>(() => {
    const current = JSON.parse(sortKey) as SortState | null;
    return current ? [{ id: current.key, desc: current.direction === "desc" }] : [];
  }, [sortKey]);
  const layoutKey = JSON.stringify(layout);
  const columnOrder = useMemo(() => {
    const { order } = JSON.parse(layoutKey) as Layout;
    return [
      ...(spec.selection ? ["select"] : []),
      ...spec.columns.filter((c) => c.pinned).map((c) => c.id),
      ...order,
    ];
  }, [layoutKey, spec]);
  const columnVisibility = useMemo(() => {
    const { hidden } = JSON.parse(layoutKey) as Layout;
    return Object.fromEntries(hidden.map((id) => [id, false]));
  }, [layoutKey]);

  const table = useReactTable<R>({
    data: filtered,
    columns,
    state: { sorting, columnOrder, columnVisibility, rowSelection },
    getRowId: (row) => String(row.id),
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
    manualFiltering: true,
    sortDescFirst: false,
    enableSortingRemoval: true,
    autoResetPageIndex: false,
    enableRowSelection: spec.selection,
  });

  const rows = table.getRowModel().rows.map((r) => r.original);
  const visibleIds = new Set(rows.map((r) => r.id));
  const selectedIds = selectedFromUrl.filter((id) => visibleIds.has(id));

  const setUrlFilters = useCallback(
    (patch: Record<string, string>, opts?: { clearAll?: boolean }) =>
      writeParams((p) => {
        const keys = opts?.clearAll ? spec.urlFilters.map((f) => f.key) : Object.keys(patch);
        for (const key of keys) {
          const filter = spec.urlFilters.find((f) => f.key === key);
          const value = patch[key] ?? "";
          if (value.trim() === "" || value === filter?.defaultValue) p.delete(key);
          else p.set(key, value);
        }
      }),
    [writeParams, spec],
  );

  const setSort = useCallback(
    (next: SortState | null) =>
      writeParams((p) => {
        const raw = formatSort(next, spec.defaultSort);
        if (raw === null) p.delete("sort");
        else p.set("sort", raw);
      }),
    [writeParams, spec],
  );

  const cycleSort = useCallback((key: string) => setSort(nextSort(sort, key)), [setSort, sort]);

  const setColumnFilters = useCallback(
    (patch: Record<string, string>, opts?: { clearAll?: boolean }) =>
      setColumnFilterState((current) => {
        const next = opts?.clearAll ? {} : { ...current };
        for (const [key, value] of Object.entries(patch)) {
          if (value === "") delete next[key];
          else next[key] = value;
        }
        return next;
      }),
    [],
  );

  const setLayout = useCallback(
    (next: Layout) => {
      const raw = formatLayout(next, spec.columns);
      try {
        if (raw === null) window.localStorage.removeItem(spec.storageKey);
        else window.localStorage.setItem(spec.storageKey, raw);
      } catch {
        // Storage may be unavailable (private mode); the URL still carries the layout.
      }
      writeParams((p) => {
        if (raw === null) p.delete("cols");
        else p.set("cols", raw);
      });
    },
    [writeParams, spec],
  );

  const setSelection = useCallback(
    (ids: number[]) =>
      writeParams((p) => {
        if (ids.length === 0) p.delete("sel");
        else p.set("sel", ids.join(","));
      }),
    [writeParams],
  );

  const resetView = useCallback(() => {
    try {
      window.localStorage.removeItem(spec.storageKey);
    } catch {
      // Storage may be unavailable; the URL no longer carries a layout either way.
    }
    setColumnFilterState({});
    writeParams((p) => {
      for (const key of [...spec.urlFilters.map((f) => f.key), "sort", "cols", "sel"]) p.delete(key);
    });
  }, [writeParams, spec]);

  const filterOptions = useCallback(
    (columnId: string): Option[] => {
      const column = spec.columns.find((c) => c.id === columnId);
      if (!column?.filter) return [];
      if (column.filter.options) return column.filter.options;
      const get = column.filter.value;
      const values = [...new Set(allRows.map((r) => String(get(r))))].sort((a, b) =>
        compareValues(a, b),
      );
      return values.map((v) => ({ value: v, label: v }));
    },
    [allRows, spec],
  );

  return {
    spec,
    table,
    rows,
    totalRows: allRows.length,
    loaded: data !== undefined,
    params,
    sort,
    columnFilters,
    layout,
    selectedIds,
    allRows,
    filterOptions,
    setUrlFilters,
    setSort,
    cycleSort,
    setColumnFilters,
    setLayout,
    setSelection,
    resetView,
  };
}

/** The latest value of `value`, for callbacks registered once. */
export function useLatest<T>(value: T): { readonly current: T } {
  const ref = useRef(value);
  ref.current = value;
  return ref;
}
