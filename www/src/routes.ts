export const KNOWN_ROUTES = [
  "/receivables/pending",
  "/receivables/all",
  "/receivables/clients",
  "/architecture",
] as const;

export const ROUTE_LABELS: Record<string, string> = {
  "/receivables/pending": "Pending invoices",
  "/receivables/all": "All invoices",
  "/receivables/clients": "Clients",
  "/architecture": "How this works",
};

/** Route → scope floor (the server resolves the same table; `app` is added to each). */
export const ROUTE_SCOPES: { [route: string]: string[] } = {
  "/receivables/pending": ["invoices", "reporting", "collections"],
  "/receivables/all": ["invoices", "reporting"],
  "/receivables/clients": ["clients", "invoices"],
  "/architecture": ["app"],
};

/** `<leaf label> — Receivables`, or `Receivables` off the nav. */
export function titleFor(pathname: string): string {
  const label = ROUTE_LABELS[pathname];
  return label ? `${label} — Receivables` : "Receivables";
}
