// Column-filter semantics (README §d): select = exact equality; number-range "min,max"
// inclusive with open sides (non-numeric sides ignored); date-range "from,to" inclusive on
// ISO date strings with open sides.
export type FilterKind = "select" | "number-range" | "date-range";

export function matchesFilter(kind: FilterKind, filter: string, value: string | number): boolean {
  if (filter === "") return true;
  if (kind === "select") return String(value) === filter;
  const [lowRaw = "", highRaw = ""] = filter.split(",");
  const low = lowRaw.trim();
  const high = highRaw.trim();
  if (kind === "number-range") {
    const n = Number(value);
    const min = low === "" ? NaN : Number(low);
    const max = high === "" ? NaN : Number(high);
    if (!Number.isNaN(min) && n < min) return false;
    if (!Number.isNaN(max) && n > max) return false;
    return true;
  }
  const s = String(value);
  if (low !== "" && s < low) return false;
  if (high !== "" && s > high) return false;
  return true;
}

/** `q`: trimmed, case-insensitive substring. */
export function matchesSearch(q: string, haystack: string): boolean {
  const needle = q.trim().toLowerCase();
  return needle === "" || haystack.toLowerCase().includes(needle);
}
