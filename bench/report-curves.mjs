// Prints scripts/bench-curves.sh's two tables and writes its figures as JSON to OUT.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

import { machine, reader } from "./lib.mjs";

const work = process.env.WORK;
const read = reader(work);
const withPeer = process.env.WITH_PEER === "1";
const ticks = Number(process.env.TICKS_PER_SECOND);
const decode = new Map(
  readFileSync(path.join(work, "decode.txt"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [name, us] = line.split(" ");
      return [name, Number(us)];
    }),
);

// figures(label, name) → the point's steps/s, p50 and CPU µs per step; null when not run.
function figures(label, name) {
  const out = read(`${label}-${name}.wrk.json`);
  if (!out || out.requests === 0) return null;
  const cpuUs = (read(`${label}-${name}.ticks`) / ticks / out.requests) * 1e6;
  return { steps: out.requests, rps: out.rps, p50Ms: out.p50_ms, errors: out.non2xx + out.socket_errors, cpuUs };
}

function point(name, x) {
  const bytes = statSync(path.join(work, `${name}.json`)).size;
  const ours = figures("ours", name);
  const decodeUs = decode.get(name) ?? null;
  const rest = ours && decodeUs != null ? ours.cpuUs - decodeUs : null;
  return {
    x,
    bytes,
    ours,
    decodeUs,
    decodeMBs: decodeUs ? bytes / decodeUs : null,
    oursOtherUs: rest,
    peer: withPeer ? figures("peer", name) : null,
  };
}

const history = process.env.HISTORIES.split(" ").map((m) => point(`history-${m}`, Number(m)));
// The server adds the demo's 8 domain tools to the frontend descriptors posted.
const catalog = process.env.CATALOGS.split(" ").map((c) =>
  point(`catalog-${c}`, c === "meta" ? "meta (3 + 8)" : `${Number(c) + 8} (${c} + 8)`),
);

const f = (n, digits = 0) => (n == null ? "—" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const row = (cells) => `| ${cells.join(" | ")} |`;

function table(title, head, points) {
  const base = points[0]?.oursOtherUs;
  console.log(`\n${title}`);
  console.log(row([head, "request", "steps/s", "CPU µs/step", "reading it µs (MB/s)", "the rest µs (× first)", "peer steps/s", "peer CPU µs/step"]));
  console.log(row(Array(8).fill("---")));
  for (const p of points) {
    console.log(
      row([
        String(p.x),
        `${f(p.bytes / 1024, 1)} KB`,
        f(p.ours?.rps),
        f(p.ours?.cpuUs),
        `${f(p.decodeUs)} (${f(p.decodeMBs)})`,
        `${f(p.oursOtherUs)} (${base ? f(p.oursOtherUs / base, 2) : "—"}×)`,
        f(p.peer?.rps),
        f(p.peer?.cpuUs),
      ]),
    );
    for (const [who, fig] of [["ours", p.ours], ["peer", p.peer]]) {
      if (fig?.errors) console.log(`  ${who}: ${fig.errors} errors at ${p.x}`);
    }
  }
}

console.log(`cost curves: ${machine()}; one connection, a fresh conversation per request, in-memory stores`);
table("History (messages in the request; catalog of Carla's 16 tools + the domain's 8):", "messages", history);
table("Catalog (tools the model is offered: frontend + the server's domain tools; 2 messages):", "tools", catalog);

writeFileSync(
  process.env.OUT,
  `${JSON.stringify({ at: new Date().toISOString(), machine: machine(), history, catalog }, null, 2)}\n`,
);
console.log(`\nwritten to ${path.relative(process.cwd(), process.env.OUT)}`);
