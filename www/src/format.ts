const eur = new Intl.NumberFormat("en-IE", {
  style: "currency",
  currency: "EUR",
  maximumFractionDigits: 0,
  minimumFractionDigits: 0,
});

/** Cents → whole euros, en-IE, e.g. 1840000 → "€18,400". */
export function formatEur(cents: number): string {
  return eur.format(Math.round(cents / 100));
}

/** Today's date in UTC as YYYY-MM-DD. */
export function utcToday(): string {
  return new Date().toISOString().slice(0, 10);
}
