// Reads the figures scripts/bench-vendor.sh left in $WORK, prints one table, and writes them all
// as JSON to $OUT.
import { writeFileSync } from "node:fs";

import { machine as machineLine, reader } from "./lib.mjs";

const work = process.env.WORK;
const streamMs = Number(process.env.STREAM_MS);
const levels = process.env.LEVELS.trim().split(/\s+/).map(Number);
const withPeer = process.env.WITH_PEER === "1";
const read = reader(work);

const side = (label) => {
  const idleKb = read(`${label}-idle-kb`);
  return levels.map((n) => {
    const load = read(`${label}-${n}.json`);
    const before = read(`${label}-${n}-vendor-before.json`);
    const after = read(`${label}-${n}-vendor-after.json`);
    const peakKb = read(`${label}-${n}-peak-kb`);
    if (!load) return { inFlight: n, missing: true };
    return {
      inFlight: n,
      rps: load.rps,
      idealRps: n / (streamMs / 1000),
      p50Ms: load.p50_ms,
      p99Ms: load.p99_ms,
      non2xx: load.non2xx,
      // Answered 200, but the step's stream ends in an `error` frame (the vendor call failed).
      errorFrames: load.error_frames,
      errorCode: load.error_code || null,
      // Answered from a step's record instead of run: 0 unless the ids were posted before.
      replayed: load.replayed,
      // wrk's connect errors: refused (or not accepted within its timeout).
      refused: load.connect_errors,
      otherSocketErrors: load.socket_errors - load.connect_errors,
      // The most connections wrk held open at once: the level is real only when it reaches n.
      heldConnections: read(`${label}-${n}-held`),
      vendorMaxInFlight: after?.maxInFlight ?? null,
      vendorRequests: after && before ? after.requests - before.requests : null,
      vendorStreamP99Ms: after?.streamP99Ms ?? null,
      // The server's own time at p99: the step's p99 less the stand-in's own p99 stream.
      overheadP99Ms: after?.streamP99Ms != null ? load.p99_ms - after.streamP99Ms : null,
      rssAboveIdleMb: peakKb && idleKb ? (peakKb - idleKb) / 1024 : null,
      kbPerStepInFlight: peakKb && idleKb ? (peakKb - idleKb) / n : null,
    };
  });
};

const machine = machineLine();
const result = {
  date: new Date().toISOString(),
  machine,
  streamMs,
  workload: "bench/carla-step0.request.json, a fresh conversation per request, --model openai:bench at the vendor stand-in",
  ours: side("ours"),
  peer: withPeer ? side("peer") : null,
};
writeFileSync(process.env.OUT, `${JSON.stringify(result, null, 2)}\n`);

const f0 = (n) => (n == null ? "—" : Math.round(n).toLocaleString("en-US"));
const f1 = (n) => (n == null ? "—" : n.toFixed(1));
const rows = [["side", "in flight", "held", "steps/s (ideal)", "p50 ms", "p99 ms", "overhead p99 ms", "non-2xx", "error frames", "replayed", "refused", "other socket errors", "vendor max in flight", "RSS above idle MB", "KB per step in flight"]];
for (const [label, figures] of [["host-server", result.ours], ["peer", result.peer]]) {
  for (const l of figures ?? []) {
    if (l.missing) {
      rows.push([label, f0(l.inFlight), "no figures", ...Array(12).fill("")]);
      continue;
    }
    rows.push([label, f0(l.inFlight), f0(l.heldConnections), `${f0(l.rps)} (${f0(l.idealRps)})`, f0(l.p50Ms), f0(l.p99Ms),
      f0(l.overheadP99Ms), f0(l.non2xx), l.errorFrames ? `${f0(l.errorFrames)} ${l.errorCode ?? ""}`.trim() : f0(l.errorFrames), f0(l.replayed), f0(l.refused), f0(l.otherSocketErrors), f0(l.vendorMaxInFlight), f1(l.rssAboveIdleMb), f1(l.kbPerStepInFlight)]);
  }
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
const line = (r) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
console.log(`\n${machine}; the vendor streams ${streamMs} ms a step\n`);
console.log(line(rows[0]));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows.slice(1)) console.log(line(r));
console.log(`\nfigures: ${process.env.OUT}`);
