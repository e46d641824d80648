// Sort semantics of the demo (README §d): numbers numerically, strings by a locale compare
// with numeric collation that ignores case and accents, null after non-nulls ascending and
// before them descending (the direction multiplies the comparison), stable.
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

export type SortValue = string | number | null | undefined;

export function compareValues(a: SortValue, b: SortValue): number {
  const aNull = a === null || a === undefined;
  const bNull = b === null || b === undefined;
  if (aNull || bNull) return aNull === bNull ? 0 : aNull ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  return collator.compare(String(a), String(b));
}

export interface SortState {
  key: string;
  direction: "asc" | "desc";
}

/** `sort` param → state: absent or malformed = default, `none` = unsorted. */
export function parseSort(
  raw: string | null,
  sortable: string[],
  fallback: SortState,
): SortState | null {
  if (raw === null || raw === "") return fallback;
  if (raw === "none") return null;
  const dot = raw.lastIndexOf(".");
  const key = raw.slice(0, dot);
  const direction = raw.slice(dot + 1);
  if (dot <= 0 || !sortable.includes(key) || (direction !== "asc" && direction !== "desc")) {
    return fallback;
  }
  return { key, direction };
}

/** State → `sort` param, `null` when it is the default (removed from the URL). */
export function formatSort(sort: SortState | null, fallback: SortState): string | null {
  if (sort === null) return "none";
  if (sort.key === fallback.key && sort.direction === fallback.direction) return null;
  return `${sort.key}.${sort.direction}`;
}

/** Header clicks cycle asc → desc → none. */
export function nextSort(current: SortState | null, key: string): SortState | null {
  if (!current || current.key !== key) return { key, direction: "asc" };
  if (current.direction === "asc") return { key, direction: "desc" };
  return null;
}
