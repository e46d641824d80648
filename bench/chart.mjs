// Draws the benchmarks' figures as one SVG chart and one Markdown table, ours beside the peer's:
// throughput by store and load (target/bench/stores.json, scripts/bench-stores.sh), CPU per step
// by history length and by catalog size (curves.json, scripts/bench-curves.sh) and memory per
// step in flight behind a slow vendor (vendor.json, scripts/bench-vendor.sh). A panel whose
// figures are missing says so. Writes target/bench/chart.svg and target/bench/tables.md; with
// `--publish` also copies the chart to docs/bench.svg and puts the table into README.md between
// its `bench:table` markers (what scripts/bench-chart.sh runs).
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, "target", "bench");
const load = (name) => {
  const file = path.join(dir, name);
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
};
const stores = load("stores.json");
const curves = load("curves.json");
const vendor = load("vendor.json");

const W = 480;
const H = 300;
const PAD = { left: 64, right: 16, top: 40, bottom: 76 };
const OURS = ["#1f6feb", "#2da44e", "#bf8700", "#cf222e"];
const PEER = ["#6e7781", "#a0a7b0"];
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

// A rounded step for about five ticks up to max.
function ticks(max) {
  if (!(max > 0)) return [0, 1];
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = 0; v <= max + step / 2; v += step) out.push(v);
  if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
  return out;
}
const num = (v) => (v >= 10_000 ? `${Math.round(v / 1000)}k` : v >= 1000 ? `${(v / 1000).toFixed(1)}k` : `${Math.round(v * 10) / 10}`);

// panel(x0, y0, title, yLabel, xs, series) → SVG of one line chart; series: {name, color, dash, values}.
function panel(x0, y0, title, yLabel, xLabel, xs, series) {
  const out = [`<g transform="translate(${x0},${y0})">`];
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">${esc(title)}</text>`);
  const shown = series.filter((s) => s.values.some((v) => v != null));
  if (shown.length === 0) {
    out.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" font-size="12" fill="#6e7781">no figures yet: run the benchmark</text></g>`);
    return out.join("");
  }
  const max = Math.max(...shown.flatMap((s) => s.values.filter((v) => v != null)));
  const ys = ticks(max);
  const top = ys[ys.length - 1];
  const iw = W - PAD.left - PAD.right;
  const ih = H - PAD.top - PAD.bottom;
  const px = (i) => PAD.left + (xs.length === 1 ? iw / 2 : (i * iw) / (xs.length - 1));
  const py = (v) => PAD.top + ih - (v / top) * ih;
  for (const v of ys) {
    out.push(`<line x1="${PAD.left}" x2="${PAD.left + iw}" y1="${py(v)}" y2="${py(v)}" stroke="#d0d7de" stroke-width="1"/>`);
    out.push(`<text x="${PAD.left - 6}" y="${py(v) + 4}" text-anchor="end" font-size="11">${num(v)}</text>`);
  }
  xs.forEach((x, i) => out.push(`<text x="${px(i)}" y="${PAD.top + ih + 16}" text-anchor="middle" font-size="11">${esc(x)}</text>`));
  out.push(`<text x="${PAD.left + iw / 2}" y="${PAD.top + ih + 32}" text-anchor="middle" font-size="11" fill="#57606a">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(14,${PAD.top + ih / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#57606a">${esc(yLabel)}</text>`);
  shown.forEach((s, k) => {
    const pts = s.values.map((v, i) => (v == null ? null : `${px(i).toFixed(1)},${py(v).toFixed(1)}`)).filter(Boolean);
    const dash = s.dash ? ` stroke-dasharray="5 4"` : "";
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${dash} points="${pts.join(" ")}"/>`);
    for (const p of pts) {
      const [cx, cy] = p.split(",");
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${s.color}"/>`);
    }
    const lx = PAD.left + (k % 3) * (iw / 3);
    const ly = H - 22 + Math.floor(k / 3) * 14;
    out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${lx + 22}" y="${ly}" font-size="11">${esc(s.name)}</text>`);
  });
  out.push("</g>");
  return out.join("");
}

const short = { memory: "memory", file: "SQLite file", pg1: "PostgreSQL ×1", pg2: "PostgreSQL ×2", "peer-memory": "peer memory", "peer-file": "peer file" };
let ourColor = 0;
let peerColor = 0;
const storeSeries = (stores?.setups ?? []).map((s) => {
  const peer = s.id.startsWith("peer");
  return {
    name: short[s.id] ?? s.id,
    color: peer ? PEER[peerColor++ % PEER.length] : OURS[ourColor++ % OURS.length],
    dash: peer,
    values: s.levels.map((l) => l?.rps ?? null),
  };
});
const storeXs = stores?.setups[0]?.levels.map((l, i) => l?.connections ?? [1, 8, 64][i]) ?? [1, 8, 64];

const curve = (points, key) => [
  { name: "ours", color: OURS[0], values: (points ?? []).map((p) => p.ours?.[key] ?? null) },
  { name: "peer", color: PEER[0], dash: true, values: (points ?? []).map((p) => p.peer?.[key] ?? null) },
];
const history = curves?.history ?? [];
const catalog = curves?.catalog ?? [];
const vendorXs = (vendor?.ours ?? []).map((l) => l.inFlight);
const vendorSeries = [
  { name: "ours", color: OURS[0], values: (vendor?.ours ?? []).map((l) => l.kbPerStepInFlight ?? null) },
  { name: "peer", color: PEER[0], dash: true, values: (vendor?.peer ?? []).map((l) => l.kbPerStepInFlight ?? null) },
];

const svg = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${2 * H + 24}" viewBox="0 0 ${2 * W} ${2 * H + 24}" font-family="system-ui, sans-serif" fill="#24292f">`,
  `<rect width="100%" height="100%" fill="#ffffff"/>`,
  panel(0, 0, "Steps per second by store and load", "steps/s", "connections (a fresh conversation per request)", storeXs, storeSeries),
  panel(W, 0, "Memory per step in flight (slow vendor)", "KB of RSS per step in flight", "steps in flight", vendorXs.length ? vendorXs : ["—"], vendorSeries),
  panel(0, H, "CPU per step by history length", "CPU µs per step", "messages in the request", history.map((p) => p.x), curve(history, "cpuUs")),
  panel(W, H, "CPU per step by catalog size", "CPU µs per step", "tools offered (frontend + domain)", catalog.map((p) => String(p.x).split(" ")[0]), curve(catalog, "cpuUs")),
  `<text x="${W}" y="${2 * H + 16}" text-anchor="middle" font-size="11" fill="#57606a">${esc(
    [stores?.date ?? curves?.at ?? vendor?.date, stores?.machine ?? curves?.machine ?? vendor?.machine].filter(Boolean).join(" · "),
  )}</text>`,
  "</svg>",
].join("\n");

const f0 = (n) => (n == null ? "—" : Math.round(n).toLocaleString("en-US"));
const table = [];
if (stores) {
  const mem = stores.setups[0];
  table.push(`| store | ${storeXs.map((c) => `steps/s @${c}`).join(" | ")} | p99 ms @8 | peak RSS MB |`);
  table.push(`|---|${storeXs.map(() => "---:").join("|")}|---:|---:|`);
  for (const s of stores.setups) {
    const cells = s.levels.map((l, i) => {
      const m = s.id.startsWith("peer") ? null : mem.levels[i]?.rps;
      return l ? `${f0(l.rps)}${m && s !== mem ? ` (${Math.round((100 * l.rps) / m)}%)` : ""}` : "—";
    });
    const p99 = s.levels[storeXs.indexOf(8)]?.p99Ms;
    table.push(`| ${s.label} | ${cells.join(" | ")} | ${p99 == null ? "—" : p99.toFixed(1)} | ${f0(s.peakRssMb)} |`);
  }
  table.push("", `${stores.machine}; ${stores.workload}; ${stores.secondsPerLoad} s a load; ${stores.date.slice(0, 10)}.`);
}
const md = `${table.join("\n")}\n`;

writeFileSync(path.join(dir, "chart.svg"), `${svg}\n`);
writeFileSync(path.join(dir, "tables.md"), md);
console.log(`written: ${path.relative(root, path.join(dir, "chart.svg"))}, ${path.relative(root, path.join(dir, "tables.md"))}`);

if (process.argv.includes("--publish")) {
  if (!stores) throw new Error("no target/bench/stores.json: run scripts/bench-stores.sh first");
  copyFileSync(path.join(dir, "chart.svg"), path.join(root, "docs", "bench.svg"));
  const readme = path.join(root, "README.md");
  const text = readFileSync(readme, "utf8");
  const start = "<!-- bench:table -->";
  const end = "<!-- /bench:table -->";
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`README.md has no ${start} … ${end} markers`);
  writeFileSync(readme, `${text.slice(0, a + start.length)}\n${md}${text.slice(b)}`);
  console.log("published: docs/bench.svg and README.md's table");
}
