// Reads the figures scripts/bench.sh left in $WORK, prints one table, and writes them all as
// JSON to $OUT.
import { writeFileSync } from "node:fs";

import { machine as machineLine, reader } from "./lib.mjs";

const work = process.env.WORK;
const withPeer = process.env.WITH_PEER === "1";
const read = reader(work);
const side = (label) => {
  const loads = {};
  for (const mode of ["same", "fresh"]) {
    for (const conns of [1, 8, 64]) loads[`${mode}-${conns}`] = read(`${label}-${mode}-${conns}.json`);
  }
  return {
    health: read(`${label}-health.json`),
    loads,
    peakRssMb: (read(`${label}-peak-kb`) ?? 0) / 1024,
  };
};
const ours = side("ours");
const peer = withPeer ? side("peer") : null;
const first = read("ours-decay-first.json");
const last = read("ours-decay-last.json");
const fill = read("ours-decay-fill.json");
const decayRuns = [first, fill, last].filter(Boolean);
const decay = first && last
  ? {
      steps: first.requests + (fill?.requests ?? 0) + last.requests,
      notStored: decayRuns.reduce((n, r) => n + (r.not_stored ?? 0), 0),
      conversations: last.generation + 1,
      firstSecondRps: first.rps,
      lastSecondRps: last.rps,
      ratio: last.rps / first.rps,
      rssStartMb: read("ours-decay-rss-start") / 1024,
      rssEndMb: read("ours-decay-rss-end") / 1024,
    }
  : null;

// The same step posted again: answered from its record, beside a fresh step at as many
// connections.
const replay = [1, 8].map((conns) => ({
  conns,
  replay: read(`ours-replay-${conns}.json`),
  fresh: ours.loads[`fresh-${conns}`],
}));
// Store growth on a SQLite file: the whole file and the step records' frames, per step stored.
const growthBefore = read("growth-before.json");
const growthAfter = read("growth-after.json");
const growthLoad = read("growth.json");
const growth = growthBefore && growthAfter && growthLoad
  ? (() => {
      const records = growthAfter.stepRecords - growthBefore.stepRecords;
      return {
        steps: growthLoad.requests,
        stepRecords: records,
        fileBytesPerStep: (growthAfter.bytes - growthBefore.bytes) / Math.max(records, 1),
        frameBytesPerStep: (growthAfter.frameBytes - growthBefore.frameBytes) / Math.max(records, 1),
      };
    })()
  : null;

const machine = machineLine();
const result = {
  date: new Date().toISOString(),
  machine,
  secondsPerLoad: Number(process.env.SECONDS_PER_LOAD),
  workload: "bench/carla-step0.request.json (the reference browser's Carla step 0), scripted model, sqlite::memory:",
  ours,
  peer,
  decay,
  replay,
  growth,
};
writeFileSync(process.env.OUT, `${JSON.stringify(result, null, 2)}\n`);

const f1 = (n) => (n == null ? "—" : n.toFixed(1));
const f0 = (n) => (n == null ? "—" : Math.round(n).toLocaleString("en-US"));
const errors = (l) => (l && (l.non2xx || l.socket_errors) ? ` (${l.non2xx + l.socket_errors} errors)` : "");
// Answers with a `thread.full` frame: served, but the step was not stored.
const unstored = (l) => (l?.not_stored ? ` (${f0(l.not_stored)} not stored)` : "");
const rows = [["load", "host-server steps/s", "p50 ms", "p99 ms", ...(peer ? ["peer steps/s", "p50 ms", "p99 ms", "ratio"] : [])]];
for (const mode of ["same", "fresh"]) {
  for (const conns of [1, 8, 64]) {
    const o = ours.loads[`${mode}-${conns}`];
    const p = peer?.loads[`${mode}-${conns}`];
    rows.push([
      `${mode} conversation, ${conns} conn`,
      f0(o?.rps) + errors(o) + unstored(o), f1(o?.p50_ms), f1(o?.p99_ms),
      ...(peer ? [f0(p?.rps) + errors(p) + unstored(p), f1(p?.p50_ms), f1(p?.p99_ms), o && p ? `${(o.rps / p.rps).toFixed(1)}×` : "—"] : []),
    ]);
  }
}
rows.push(["GET /api/health, 8 conn", f0(ours.health?.rps), f1(ours.health?.p50_ms), f1(ours.health?.p99_ms),
  ...(peer ? [f0(peer.health?.rps), f1(peer.health?.p50_ms), f1(peer.health?.p99_ms), "—"] : [])]);
rows.push(["peak RSS (MB)", f1(ours.peakRssMb), "", "", ...(peer ? [f1(peer.peakRssMb), "", "", ""] : [])]);
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
const line = (r) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
console.log(`\n${machine}; ${result.secondsPerLoad} s per load\n`);
console.log(line(rows[0]));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows.slice(1)) console.log(line(r));
console.log(
  "\nSame conversation: 133 steps (the 400-message thread cap) into a conversation, then the next;" +
    " every step counted is stored, but for the answers marked 'not stored' (a thread.full frame).",
);
if (decay) {
  console.log(
    `\nhost-server, ${f0(decay.steps)} steps at 8 conn (${f0(decay.conversations)} conversations, ` +
      `${f0(decay.notStored)} not stored): first second ${f0(decay.firstSecondRps)} steps/s, ` +
      `last second ${f0(decay.lastSecondRps)} steps/s (${decay.ratio.toFixed(2)}×); RSS ${f1(decay.rssStartMb)} → ${f1(decay.rssEndMb)} MB`,
  );
}
for (const { conns, replay: r, fresh: f } of replay) {
  if (!r) continue;
  console.log(
    `\nreplayed step, ${conns} conn: ${f0(r.rps)} steps/s${errors(r)}, p50 ${f1(r.p50_ms)} ms, p99 ${f1(r.p99_ms)} ms ` +
      `(${f0(r.replayed)} of ${f0(r.requests)} answered from the record); a fresh step: ${f0(f?.rps)} steps/s, p50 ${f1(f?.p50_ms)} ms`,
  );
}
if (growth) {
  console.log(
    `\nstore growth on a SQLite file: ${f0(growth.stepRecords)} step records from ${f0(growth.steps)} steps; ` +
      `${f0(growth.fileBytesPerStep)} bytes of file per step (thread, audit, ledger and record), ` +
      `${f0(growth.frameBytesPerStep)} of them the record's frames`,
  );
}
console.log(`\nfigures: ${process.env.OUT}`);
