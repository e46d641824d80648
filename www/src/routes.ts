// The route → scope floor table is the server's: host-server's demo module resolves the same
// file (`demo::route_floors`), so the browser and the server cannot disagree about a floor.
import routeScopes from "../../demo/src/routes.json";

/** Route → scope floor (`app` is added to each, here by the package and on the server). */
export const ROUTE_SCOPES: { [route: string]: string[] } = routeScopes;

/** The app's routes, in the table's order (the navigation's order). */
export const KNOWN_ROUTES: readonly string[] = Object.keys(ROUTE_SCOPES);

export const ROUTE_LABELS: Record<string, string> = {
  "/receivables/pending": "Pending invoices",
  "/receivables/all": "All invoices",
  "/receivables/clients": "Clients",
  "/architecture": "How this works",
};

/** `<leaf label> — Receivables`, or `Receivables` off the nav. */
export function titleFor(pathname: string): string {
  const label = ROUTE_LABELS[pathname];
  return label ? `${label} — Receivables` : "Receivables";
}
