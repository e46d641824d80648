// Writes a step request for the cost curves (scripts/bench-curves.sh): the reference browser's
// Carla step 0 (bench/carla-step0.request.json) with its history grown to MESSAGES messages
// and its frontend catalog grown to TOOLS descriptors (Carla's: 16), or sent in meta mode.
//
//   node bench/request.mjs --messages 400 --tools 16 > req.json
//   node bench/request.mjs --messages 2 --mode meta > req.json
//
// The history repeats one exchange of the Carla turn (the user's question, the model's read
// of the table, its result, the model's answer: about 130 bytes a message) and ends with the user's question, so it is always step 0 of a new turn. Grown
// tools are copies of Carla's view descriptors under new names (`view_bench__t<n>__…`), each
// with its state entry; the domain tool stays as it is.
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : args[at + 1];
};
const messages = Number(opt("messages", "2"));
const tools = Number(opt("tools", "16"));
const mode = opt("mode", "direct");
if (!Number.isInteger(messages) || messages < 1 || messages > 400) {
  throw new Error("--messages takes 1 to 400 (the protocol's limit)");
}
if (!Number.isInteger(tools) || tools < 1 || tools > 128) {
  throw new Error("--tools takes 1 to 128 (the frontend limit; beyond it the browser sends meta)");
}
if (mode !== "direct" && mode !== "meta") throw new Error("--mode is direct or meta");

const carla = JSON.parse(readFileSync(new URL("./carla-step0.request.json", import.meta.url), "utf8"));
const question = carla.messages.at(-1);

// One exchange of four messages; the call ids are unique per exchange.
const exchange = (n) => [
  question,
  {
    role: "assistant",
    content: [
      {
        type: "tool-call",
        toolCallId: `call_h${n}`,
        toolName: "view_invoices__pending__readState",
        input: {},
      },
    ],
  },
  {
    role: "tool",
    content: [
      {
        type: "tool-result",
        toolCallId: `call_h${n}`,
        toolName: "view_invoices__pending__readState",
        output: { type: "json", value: { rows: [{ id: `inv_${n}`, customer: "Acme", dueIn: -12 }], total: 1 } },
      },
    ],
  },
  { role: "assistant", content: [{ type: "text", text: `Invoice inv_${n} for Acme is 12 days overdue.` }] },
];
// The last MESSAGES - 1 messages of whole exchanges, then the question. A result cut off from
// its call becomes an answer.
const exchanges = [];
for (let n = 0; exchanges.length < messages - 1; n++) exchanges.push(...exchange(n));
const history = exchanges.slice(exchanges.length - (messages - 1));
if (history[0]?.role === "tool") history[0] = exchange(-1)[3];
history.push(question);

const views = carla.catalog.frontendTools.filter((t) => t.plane === "view");
const domain = carla.catalog.frontendTools.filter((t) => t.plane !== "view");
const frontend = [];
for (let i = 0; frontend.length < tools - domain.length; i++) {
  const base = views[i % views.length];
  if (i < views.length) {
    frontend.push(base);
    continue;
  }
  const copy = Math.floor(i / views.length);
  const [, , , name] = base.wireName.split(/_+/);
  frontend.push({
    ...base,
    wireName: `view_bench__t${copy}__${name}`,
    canonicalId: `view:bench.t${copy}.${name}`,
  });
}
frontend.push(...domain);

// The three constant descriptors a browser in meta mode sends (protocol/src/catalog.rs,
// `meta_descriptors`), whatever its registry holds.
const meta = [
  ["surface_discover", "read", "[view · read] Lists what the screen offers right now: components, their observations and actions, contextual procedures, input schemas and availability. Call it with no arguments first; pass `scope` only to narrow to component-type prefixes you have seen in a previous answer.", { type: "object", properties: { scope: { type: "array", items: { type: "string" } } }, additionalProperties: false }],
  ["surface_read", "read", "[view · read] Reads one observation by the capabilityId that surface_discover listed.", { type: "object", properties: { capabilityId: { type: "string" }, instanceId: { type: "string" } }, required: ["capabilityId"], additionalProperties: false }],
  ["surface_act", "unknown", "[view · unknown] Runs one action or contextual procedure by the capabilityId that surface_discover listed; its own arguments go inside `input`.", { type: "object", properties: { capabilityId: { type: "string" }, instanceId: { type: "string" }, input: { type: "object" }, invocationId: { type: "string" }, confirmationId: { type: "string" }, surfaceVersion: { type: "string" } }, required: ["capabilityId"], additionalProperties: false }],
].map(([wireName, effect, description, inputSchema]) => ({
  wireName,
  canonicalId: `meta:${wireName}`,
  plane: "view",
  description,
  inputSchema,
  effect,
  confirmation: "never",
}));

const catalog = mode === "meta" ? [...meta, ...domain] : frontend;
const request = {
  ...carla,
  messages: history,
  catalog: {
    ...carla.catalog,
    mode,
    frontendTools: catalog,
    frontendState: catalog.map((t) => ({ wireName: t.wireName, available: true })),
  },
};
process.stdout.write(JSON.stringify(request));
