// Standard Schema capabilities: a definition's `inputSchema`/`outputSchema` may be a Standard
// Schema v1 object (zod ≥ 4.2, ArkType ≥ 2.2, Valibot through @valibot/to-json-schema's
// `toStandardJsonSchema`, …) instead of a JSON Schema. The wire and the registry get its JSON
// Schema, from the Standard JSON Schema interface (`~standard.jsonSchema`), converted once per
// schema object; an action's `execute` gets the input as the schema's `validate` returns it,
// and validation issues are the tool result INVALID_INPUT (retry with-changes), as the
// registry's own schema check has it. Plain JSON Schemas pass through unchanged.

const TARGET = "draft-2020-12";

/** Schema object → { input?, output? }: its JSON Schemas, each converted on first use. */
const converted = new WeakMap();

/** A Standard Schema v1 object (ArkType's are functions). */
export function isStandardSchema(value) {
  const kind = typeof value;
  return (
    value !== null &&
    (kind === "object" || kind === "function") &&
    typeof value["~standard"] === "object" &&
    value["~standard"] !== null
  );
}

function unsupported(message) {
  return Object.assign(new Error(message), { code: "UNSUPPORTED_SCHEMA" });
}

function convert(schema, io, what) {
  const standard = schema["~standard"];
  const vendor = standard.vendor ?? "an unknown library";
  if (typeof standard.jsonSchema?.[io] !== "function") {
    throw unsupported(
      `${what} is a Standard Schema of ${vendor} that cannot give its JSON Schema (no ~standard.jsonSchema): ` +
        "use a version of the library that implements Standard JSON Schema (zod 4.2 or later, ArkType 2.2 or later), " +
        "wrap it (Valibot: toStandardJsonSchema from @valibot/to-json-schema), or pass a JSON Schema " +
        "(e.g. z.toJSONSchema(schema)).",
    );
  }
  let json;
  try {
    json = standard.jsonSchema[io]({ target: TARGET });
  } catch (error) {
    throw unsupported(
      `${what}: ${vendor} could not convert it to JSON Schema (${error?.message ?? error}); ` +
        "use only what JSON Schema can express, or pass a JSON Schema.",
    );
  }
  if (json === null || typeof json !== "object") {
    throw unsupported(`${what}: ${vendor}'s ~standard.jsonSchema.${io}() returned no JSON Schema object.`);
  }
  return json;
}

/** `schema` as a JSON Schema: itself, or a Standard Schema's `io` ("input" | "output") JSON
 *  Schema, converted once per schema object. `what` names it in errors. */
export function wireSchema(schema, io, what) {
  if (!isStandardSchema(schema)) return schema;
  let entry = converted.get(schema);
  if (entry === undefined) {
    entry = {};
    converted.set(schema, entry);
  }
  entry[io] ??= convert(schema, io, what);
  return entry[io];
}

/** An issue's path as the registry writes it: a JSON Pointer ("" is the input itself). */
function pointer(path) {
  let out = "";
  for (const segment of path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    out += "/" + String(key).replaceAll("~", "~0").replaceAll("/", "~1");
  }
  return out;
}

function invalidInput(capabilityId, issues) {
  const list = issues.map((issue) => ({ path: pointer(issue.path), message: String(issue.message) }));
  const error = new Error(
    `The input does not match the input schema of ${capabilityId}. Fix the listed issues and call it again.`,
  );
  return Object.assign(error, { code: "INVALID_INPUT", retry: "with-changes", details: { issues: list } });
}

/** `execute` behind the schema's `validate` (sync or async): it runs with the validated value,
 *  or not at all when there are issues. A sync validation keeps a sync handler sync. */
function validated(schema, execute, capabilityId) {
  return (input, context) => {
    const run = (result) => {
      if (result?.issues) throw invalidInput(capabilityId, result.issues);
      return execute(result.value, context);
    };
    const result = schema["~standard"].validate(input);
    return typeof result?.then === "function" ? result.then(run) : run(result);
  };
}

function items(list, map) {
  return Array.isArray(list) ? list.map((item) => (item !== null && typeof item === "object" ? map(item) : item)) : list;
}

/** The definition the registry reads: Standard Schemas as JSON Schemas, actions with one as
 *  their input validated by it, an observation without `outputSchema` given `{}` (any
 *  output). Anything else is left for the registry to accept or refuse. */
export function wireDefinition(def) {
  if (def === null || typeof def !== "object") return def;
  const owner = typeof def.type === "string" ? def.type : "?";
  const what = (kind, name, key) => `${kind} "${owner}.${name}" ${key}`;
  const optional = (schema, io, label) => (schema === undefined ? schema : wireSchema(schema, io, label));
  return {
    ...def,
    observations: items(def.observations, (item) => ({
      ...item,
      outputSchema:
        item.outputSchema === undefined ? {} : wireSchema(item.outputSchema, "output", what("ObservationDef", item.name, "outputSchema")),
    })),
    actions: items(def.actions, (item) => {
      const out = {
        ...item,
        inputSchema: wireSchema(item.inputSchema, "input", what("ActionDef", item.name, "inputSchema")),
        outputSchema: optional(item.outputSchema, "output", what("ActionDef", item.name, "outputSchema")),
      };
      if (isStandardSchema(item.inputSchema) && typeof item.execute === "function") {
        out.execute = validated(item.inputSchema, item.execute, `view:${owner}.${item.name}`);
      }
      return out;
    }),
    procedures: items(def.procedures, (item) => ({
      ...item,
      inputSchema: wireSchema(item.inputSchema, "input", what("ProcedureDef", item.path, "inputSchema")),
      outputSchema: optional(item.outputSchema, "output", what("ProcedureDef", item.path, "outputSchema")),
    })),
  };
}
