import { flexRender } from "@tanstack/react-table";
import type { ReactNode } from "react";
import { moveColumn } from "./capabilities";
import type { LedgerTable } from "./useLedgerTable";

interface Props<R extends { id: number }> {
  t: LedgerTable<R>;
  /** Extra toolbar controls (e.g. the due select). */
  toolbar?: ReactNode;
  /** Keys the toolbar's "Clear filters" button clears (the pending screen keeps `chase`). */
  clearKeys: string[];
  /** A trailing cell per row (e.g. the Chase button). */
  rowActions?: (row: R) => ReactNode;
  searchLabel: string;
}

export function LedgerTableView<R extends { id: number }>({ t, toolbar, clearKeys, rowActions, searchLabel }: Props<R>) {
  const { spec, table } = t;
  const filterColumns = spec.columns.filter((c) => c.filter);
  const headers = table.getHeaderGroups()[0]?.headers ?? [];
  return (
    <div className="ledger">
      <div className="toolbar" role="toolbar" aria-label={`${spec.ariaLabel} filters`}>
        <label className="field">
          <span>{searchLabel}</span>
          <input
            type="search"
            value={t.params.get("q") ?? ""}
            onChange={(e) => t.setUrlFilters({ q: e.target.value })}
            placeholder="Search"
          />
        </label>
        {toolbar}
        <button
          type="button"
          onClick={() => {
            t.setUrlFilters(Object.fromEntries(clearKeys.map((k) => [k, ""])));
            t.setColumnFilters({}, { clearAll: true });
          }}
        >
          Clear filters
        </button>
        <button type="button" onClick={() => t.resetView()}>
          Reset view
        </button>
        <details className="columns-menu">
          <summary>Columns</summary>
          <ul>
            {t.layout.order.map((id) => {
              const column = spec.columns.find((c) => c.id === id)!;
              const hidden = t.layout.hidden.includes(id);
              return (
                <li key={id}>
                  <label>
                    <input
                      type="checkbox"
                      aria-label={`Show ${column.label}`}
                      checked={!hidden}
                      disabled={column.hideable === false}
                      onChange={() =>
                        t.setLayout({
                          order: t.layout.order,
                          hidden: hidden ? t.layout.hidden.filter((h) => h !== id) : [...t.layout.hidden, id],
                        })
                      }
                    />
                    {column.label}
                  </label>
                  <button
                    type="button"
                    aria-label={`Move ${column.label} left`}
                    onClick={() => t.setLayout({ order: moveColumn(t.layout.order, id, -1), hidden: t.layout.hidden })}
                  >
                    ←
                  </button>
                  <button
                    type="button"
                    aria-label={`Move ${column.label} right`}
                    onClick={() => t.setLayout({ order: moveColumn(t.layout.order, id, 1), hidden: t.layout.hidden })}
                  >
                    →
                  </button>
                </li>
              );
            })}
          </ul>
        </details>
      </div>
      {filterColumns.length > 0 && (
        <div className="column-filters" role="group" aria-label="Column filters">
          {filterColumns.map((c) => {
            const value = t.columnFilters[c.id] ?? "";
            if (c.filter!.kind === "select") {
              return (
                <label key={c.id} className="field">
                  <span>{c.label}</span>
                  <select
                    aria-label={`Filter by ${c.label}`}
                    value={value}
                    onChange={(e) => t.setColumnFilters({ [c.id]: e.target.value })}
                  >
                    <option value="">Any</option>
                    {t.filterOptions(c.id).map((o) => (
                      <option key={o.value} value={o.value}>
                        {o.label}
                      </option>
                    ))}
                  </select>
                </label>
              );
            }
            const [low = "", high = ""] = value.split(",");
            const type = c.filter!.kind === "date-range" ? "date" : "number";
            const set = (lo: string, hi: string) =>
              t.setColumnFilters({ [c.id]: lo === "" && hi === "" ? "" : `${lo},${hi}` });
            return (
              <fieldset key={c.id} className="range">
                <legend>{c.filter!.kind === "number-range" ? `${c.label} (€)` : c.label}</legend>
                <input type={type} aria-label={`${c.label} from`} value={low} onChange={(e) => set(e.target.value, high)} />
                <span aria-hidden="true">–</span>
                <input type={type} aria-label={`${c.label} to`} value={high} onChange={(e) => set(low, e.target.value)} />
              </fieldset>
            );
          })}
        </div>
      )}
      <div className="table-scroll">
        <table aria-label={spec.ariaLabel}>
          <thead>
            <tr>
              {headers.map((header) => {
                const id = header.column.id;
                if (id === "select") {
                  const allIds = t.rows.map((r) => r.id);
                  const all = allIds.length > 0 && t.selectedIds.length === allIds.length;
                  return (
                    <th key={id} className="select-cell">
                      <input
                        type="checkbox"
                        aria-label="Select all visible rows"
                        checked={all}
                        onChange={() => t.setSelection(all ? [] : allIds)}
                      />
                    </th>
                  );
                }
                const column = spec.columns.find((c) => c.id === id)!;
                const sorted = t.sort?.key === id ? t.sort.direction : null;
                return (
                  <th
                    key={id}
                    className={column.numeric ? "num" : undefined}
                    aria-sort={sorted === "asc" ? "ascending" : sorted === "desc" ? "descending" : undefined}
                  >
                    {column.sortable ? (
                      <button type="button" className="sort" onClick={() => t.cycleSort(id)}>
                        {column.label}
                        <span aria-hidden="true" className="sort-mark">
                          {sorted === "asc" ? " ▲" : sorted === "desc" ? " ▼" : ""}
                        </span>
                      </button>
                    ) : (
                      column.label
                    )}
                  </th>
                );
              })}
              {rowActions && (
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {table.getRowModel().rows.map((row) => (
              <tr key={row.id} {...{ [spec.rowAttr]: row.original.id }} aria-selected={row.getIsSelected() || undefined}>
                {row.getVisibleCells().map((cell) => {
                  if (cell.column.id === "select") {
                    const selected = t.selectedIds.includes(row.original.id);
                    return (
                      <td key={cell.id} className="select-cell">
                        <input
                          type="checkbox"
                          aria-label={`Select ${spec.rowLabel(row.original)}`}
                          checked={selected}
                          onChange={() =>
                            t.setSelection(
                              selected
                                ? t.selectedIds.filter((id) => id !== row.original.id)
                                : [...t.selectedIds, row.original.id],
                            )
                          }
                        />
                      </td>
                    );
                  }
                  const column = spec.columns.find((c) => c.id === cell.column.id)!;
                  return (
                    <td key={cell.id} className={column.numeric ? "num" : undefined}>
                      {flexRender(cell.column.columnDef.cell, cell.getContext())}
                    </td>
                  );
                })}
                {rowActions && <td className="row-actions">{rowActions(row.original)}</td>}
              </tr>
            ))}
          </tbody>
        </table>
        {t.loaded && t.rows.length === 0 && <p className="empty">No rows match these filters.</p>}
        {!t.loaded && <p className="empty">Loading…</p>}
      </div>
      <p className="table-foot">
        {t.rows.length} of {t.totalRows} rows
      </p>
    </div>
  );
}
