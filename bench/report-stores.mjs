// Reads the figures scripts/bench-stores.sh left in $WORK, prints one table (steps/s, p50 and
// p99 by store and connections, each as a share of the in-memory figure at the same level),
// and writes them as JSON to $OUT.
import { writeFileSync } from "node:fs";

import { machine as machineLine, reader } from "./lib.mjs";

const work = process.env.WORK;
const read = reader(work);
const levels = process.env.LEVELS.trim().split(/\s+/).map(Number);
const withPeer = process.env.WITH_PEER === "1";
const tick = Number(process.env.CLK_TCK || 100);

const setups = [
  ["memory", "host-server, SQLite in memory"],
  ["file", "host-server, SQLite file (WAL)"],
  ["pg1", "host-server, PostgreSQL, 1 replica"],
  ["pg2", "host-server, PostgreSQL, 2 replicas"],
  ...(withPeer ? [["peer-memory", "peer, SQLite in memory"], ["peer-file", "peer, SQLite file (WAL)"]] : []),
];

// level(setup, conns) → the summed figures of the wrk loads run at once for that level.
function level(setup, conns) {
  const rows = [];
  for (let i = 0; ; i++) {
    const row = read(`${setup}-${conns}-${i}.json`);
    if (!row) break;
    rows.push(row);
  }
  if (rows.length === 0) return null;
  const requests = rows.reduce((s, r) => s + r.requests, 0);
  const ticks = read(`${setup}-${conns}-cpu.json`) ?? { server: 0, database: 0 };
  const [serverTicks, dbTicks] = [ticks.server, ticks.database];
  const perStepUs = (ticks) => (requests > 0 ? (ticks * 1e6) / tick / requests : null);
  return {
    connections: conns,
    servers: rows.length,
    rps: rows.reduce((s, r) => s + r.rps, 0),
    p50Ms: Math.max(...rows.map((r) => r.p50_ms)),
    p99Ms: Math.max(...rows.map((r) => r.p99_ms)),
    errors: rows.reduce((s, r) => s + r.non2xx + r.socket_errors, 0),
    serverCpuUsPerStep: perStepUs(serverTicks),
    databaseCpuUsPerStep: setup.startsWith("pg") ? perStepUs(dbTicks) : null,
  };
}

const result = {
  date: new Date().toISOString(),
  machine: machineLine(),
  secondsPerLoad: Number(process.env.SECONDS_PER_LOAD),
  workload: "bench/carla-step0.request.json, a fresh conversation per request, scripted model",
  setups: setups.map(([id, label]) => ({
    id,
    label,
    peakRssMb: (read(`${id}-peak-kb`) ?? 0) / 1024,
    levels: levels.map((c) => level(id, c)),
  })),
};
writeFileSync(process.env.OUT, `${JSON.stringify(result, null, 2)}\n`);

const memory = result.setups[0];
const f0 = (n) => (n == null ? "—" : Math.round(n).toLocaleString("en-US"));
const f2 = (n) => (n == null ? "—" : n.toFixed(2));
const cpuAt = levels.includes(8) ? 8 : levels[0];
const head = [
  "store",
  ...levels.map((c) => `steps/s @${c} (of memory)`),
  ...levels.map((c) => `p50 / p99 ms @${c}`),
  `CPU µs/step @${cpuAt}: server + database`,
  "errors",
  "peak RSS MB",
];
const cpu = (l) =>
  l?.serverCpuUsPerStep == null
    ? "—"
    : `${f0(l.serverCpuUsPerStep)}${l.databaseCpuUsPerStep == null ? "" : ` + ${f0(l.databaseCpuUsPerStep)}`}`;
const rows = [head];
for (const s of result.setups) {
  const base = s.id.startsWith("peer") ? null : memory;
  rows.push([
    s.label,
    ...s.levels.map((l, i) => {
      const m = base?.levels[i]?.rps;
      return l ? `${f0(l.rps)}${m ? ` (${Math.round((100 * l.rps) / m)}%)` : ""}` : "—";
    }),
    ...s.levels.map((l) => (l ? `${f2(l.p50Ms)} / ${f2(l.p99Ms)}` : "—")),
    cpu(s.levels[levels.indexOf(cpuAt)]),
    f0(s.levels.reduce((n, l) => n + (l?.errors ?? 0), 0)),
    f0(s.peakRssMb),
  ]);
}
const widths = head.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
const line = (r) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
console.log(`\n${result.machine}; ${result.secondsPerLoad} s a load; ${result.workload}\n`);
console.log(line(rows[0]));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows.slice(1)) console.log(line(r));
console.log(`\nfigures: ${process.env.OUT}`);
