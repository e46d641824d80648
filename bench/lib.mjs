// Shared by the benchmarks' reports (bench/report.mjs, bench/report-vendor.mjs).
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// reader(dir) → read(name): a figure a benchmark script left in dir, JSON for `.json` files and
// a number otherwise; null when the file is missing.
export const reader = (dir) => (name) => {
  const file = path.join(dir, name);
  if (!existsSync(file)) return null;
  const text = readFileSync(file, "utf8").trim();
  return name.endsWith(".json") ? JSON.parse(text) : Number(text);
};

// The machine line every table prints.
export function machine() {
  const cpu = os.cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`;
}
