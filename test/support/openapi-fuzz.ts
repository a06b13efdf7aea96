import fc from "fast-check";

// Requests built from the served OpenAPI document: for each operation, path parameters,
// queries, headers and bodies that are valid, at a boundary, or hostile (wrong types, unicode
// with lone surrogates, NUL, deep nesting, duplicate keys, oversized, not JSON at all).

export type JsonSchema = { [keyword: string]: unknown };

type OpenApiParameter = {
  name: string;
  in: string;
  required?: boolean;
  schema?: JsonSchema;
};

type OpenApiOperation = {
  operationId?: string;
  parameters?: OpenApiParameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, unknown>;
};

export type OpenApiDocument = {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
};

type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export type DocumentedOperation = {
  /** `PATCH /pages/{page_id}`, as a test name. */
  name: string;
  method: HttpMethod;
  template: string;
  operation: OpenApiOperation;
  /** The request body's schema, references resolved at the top. */
  bodySchema?: JsonSchema;
};

const METHODS: readonly HttpMethod[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** Every operation the document describes, in document order. */
export function documentedOperations(document: OpenApiDocument): DocumentedOperation[] {
  return Object.entries(document.paths).flatMap(([template, operations]) =>
    Object.entries(operations).flatMap(([method, operation]) => {
      const upper = method.toUpperCase() as HttpMethod;
      if (!METHODS.includes(upper)) return [];
      const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
      return [
        {
          name: `${upper} ${template}`,
          method: upper,
          template,
          operation,
          bodySchema: bodySchema === undefined ? undefined : resolve(document, bodySchema),
        },
      ];
    }),
  );
}

function resolve(document: OpenApiDocument, schema: JsonSchema): JsonSchema {
  const ref = schema.$ref;
  if (typeof ref !== "string") return schema;
  const name = ref.replace("#/components/schemas/", "");
  const target = document.components?.schemas?.[name];
  if (target === undefined) throw new Error(`unresolvable reference ${ref}`);
  return resolve(document, target);
}

// --- text ---------------------------------------------------------------------------------

/** Text no client should send and some will: NUL, lone surrogates, controls, odd unicode. */
const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.string({ maxLength: 3 }).map((s) => `${s}\u0000${s}`),
  fc.string({ maxLength: 3 }).map((s) => `\ud800${s}`),
  fc.string({ maxLength: 3 }).map((s) => `${s}\udfff`),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\ud800",
    "\udc00\ud800",
    "\u202e\u200b\ufeff",
    "e\u0301\u0301\u0301",
    "🧑‍🚀",
    "\r\n\t\u000b\u0085\u2028",
    "null",
    "undefined",
    "__proto__",
    "constructor",
    "' or 1=1 --",
    "%00",
    "{{7*7}}#{7*7}",
    "<script>alert(1)</script>",
  ),
);

/** Strings at and just past the schema's length bounds, in single- and multi-unit characters. */
function boundaryText(minLength: number, maxLength: number | undefined): fc.Arbitrary<string> {
  const lengths = [0, minLength, Math.max(0, minLength - 1)];
  if (maxLength !== undefined) lengths.push(maxLength, maxLength + 1);
  return fc
    .tuple(fc.constantFrom(...lengths), fc.constantFrom("x", "é", "😀", "\u0000"))
    .map(([length, unit]) => unit.repeat(length));
}

/**
 * Markdown that stresses the converter: deep nesting of lists and quotes, runs of emphasis,
 * brackets and backticks that make parsers backtrack, tables, images and raw HTML.
 */
const hostileMarkdown: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("- ", "> ", "1. ", "  - ", "\t", "* > "),
      fc.integer({ min: 1, max: 3000 }),
    )
    .map(([marker, depth]) => `${marker.repeat(depth)}deep`),
  fc
    .tuple(fc.constantFrom("[", "](", "`", "<", "\\", "**", "~~", "![", "|", "&#"), fc.nat(100_000))
    .map(([unit, count]) => unit.repeat(count)),
  // Openers that never close (emphasis, links, bare URLs), which a parser may scan ahead from
  // one by one. Kept under 100 KB: a quadratic scan of that takes a minute, of the whole body
  // limit, hours.
  fc
    .tuple(
      fc.constantFrom(
        "*a_",
        "_a_",
        "__a_",
        "*a*",
        "**a**a",
        "***a",
        "~a*",
        "1.*",
        "[**a.",
        "[a](b)",
        "![a](b)",
        "www.a(",
        "http://a(",
        "!",
        "!=",
      ),
      fc.integer({ min: 1, max: 30_000 }),
    )
    .map(([unit, count]) => unit.repeat(count)),
  fc
    .tuple(fc.integer({ min: 1, max: 500 }), fc.constantFrom("- ", "1. ", "> "))
    .map(([depth, marker]) =>
      Array.from({ length: depth }, (_, level) => `${"  ".repeat(level)}${marker}item`).join("\n"),
    ),
  fc.constantFrom(
    "# Title\n\n- a\n- b\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![x](http://x/y.png)",
    "```\nunclosed fence",
    "<div><p>html</p></div>",
    "[link](javascript:alert(1))",
    "---\n***\n___",
    "#".repeat(7),
    "\u0000# nul",
  ),
);

function stringValue(schema: JsonSchema, name: string): fc.Arbitrary<string> {
  const minLength = typeof schema.minLength === "number" ? schema.minLength : 0;
  const maxLength = typeof schema.maxLength === "number" ? schema.maxLength : undefined;
  const within = fc.string({ minLength, maxLength: Math.min(maxLength ?? 60, 60) });
  const unicode = fc.string({
    unit: "grapheme",
    minLength,
    maxLength: Math.min(maxLength ?? 20, 20),
  });
  switch (schema.format) {
    case "uuid":
      return fc.oneof(
        fc.uuid(),
        fc.uuid().map((id) => id.toUpperCase()),
      );
    case "date":
      return validDate;
    case "date-time":
      return validDateTime;
    case "uri":
      return validUrl;
    default:
      break;
  }
  const markdown = /markdown|notes/i.test(name) ? [hostileMarkdown] : [];
  return fc.oneof(
    { arbitrary: within, weight: 4 },
    { arbitrary: unicode, weight: 2 },
    { arbitrary: boundaryText(minLength, maxLength), weight: 2 },
    ...markdown.map((arbitrary) => ({ arbitrary, weight: 2 })),
  );
}

const validDate = fc.oneof(
  fc
    .date({ min: new Date("0001-01-01"), max: new Date("9999-12-31"), noInvalidDate: true })
    .map((date) => date.toISOString().slice(0, 10)),
  fc.constantFrom("2024-02-29", "0001-01-01", "9999-12-31", "2026-12-31"),
);

const validDateTime = fc.oneof(
  fc
    .date({ min: new Date("0001-01-01"), max: new Date("9999-12-31"), noInvalidDate: true })
    .map((date) => date.toISOString()),
  fc.constantFrom(
    "2026-01-01T00:00:00Z",
    "2026-06-30T23:59:59.999999+14:00",
    "0001-01-01T00:00:00-12:00",
    "9999-12-31T23:59:59Z",
    // Valid as written, and a year outside 0001-9999 once moved to UTC.
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-23:59",
  ),
);

const validUrl = fc.oneof(
  fc.webUrl({ validSchemes: ["http", "https"] }),
  fc.constantFrom(
    "https://example.com",
    "http://localhost:1/",
    "https://[::1]/x",
    `https://example.com/${"a".repeat(3000)}`,
    "https://user:pass@example.com/",
    "https://example.com/\u00e9?q=\u0000",
  ),
);

/** Names a test can map to values it knows exist (fixture ids, for example). */
export type ValueHints = (name: string) => fc.Arbitrary<unknown> | undefined;

/**
 * A value the schema allows (as far as JSON Schema can say: the service may still refuse it
 * for a reason the schema cannot express), its strings at their length bounds or hostile.
 */
export function schemaValue(
  document: OpenApiDocument,
  raw: JsonSchema,
  hints: ValueHints,
  name = "",
  depth = 0,
): fc.Arbitrary<unknown> {
  const schema = resolve(document, raw);
  const hinted = name === "" ? undefined : hints(name);
  const own = ownValue(document, schema, hints, name, depth);
  return hinted === undefined
    ? own
    : fc.oneof({ arbitrary: hinted, weight: 3 }, { arbitrary: own, weight: 1 });
}

function ownValue(
  document: OpenApiDocument,
  schema: JsonSchema,
  hints: ValueHints,
  name: string,
  depth: number,
): fc.Arbitrary<unknown> {
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches)) {
    return fc.oneof(
      ...branches.map((branch) => schemaValue(document, branch as JsonSchema, hints, name, depth)),
    );
  }
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (schema.type) {
    case "string":
      return stringValue(schema, name);
    case "integer":
      return fc.integer({
        min: typeof schema.minimum === "number" ? schema.minimum : -(2 ** 31),
        max: typeof schema.maximum === "number" ? schema.maximum : 2 ** 31 - 1,
      });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const items = (schema.items as JsonSchema | undefined) ?? {};
      return depth > 3
        ? fc.constant([])
        : fc.array(schemaValue(document, items, hints, name, depth + 1), { maxLength: 3 });
    }
    case "object":
      return objectValue(document, schema, hints, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectValue(
  document: OpenApiDocument,
  schema: JsonSchema,
  hints: ValueHints,
  depth: number,
): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  if (Object.keys(properties).length === 0) return fc.dictionary(fc.string(), fc.jsonValue());
  return fc.record(
    Object.fromEntries(
      Object.entries(properties).map(([key, property]) => [
        key,
        schemaValue(document, property, hints, key, depth + 1),
      ]),
    ),
    { requiredKeys: required },
  );
}

// --- bodies -------------------------------------------------------------------------------

/** Something to put where the schema expects a value of another type. */
const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1e308, -0, "", [], {}, [null], { "": "" }),
  fc.integer(),
  fc.double(),
  hostileText,
  fc.jsonValue({ maxDepth: 3 }),
);

const NESTING = 10_000;

// Stands in a generated object for a value spliced into its JSON text afterwards.
const MARKER = "\u0001spliced\u0001";

type Nesting = "array" | "object" | "mixed";

/** JSON text `levels` deep, of arrays, objects or both. */
function deeplyNested(levels: number, kind: Nesting): string {
  const open = kind === "array" ? "[" : kind === "object" ? '{"a":' : '[{"a":';
  const close = kind === "array" ? "]" : kind === "object" ? "}" : "}]";
  return `${open.repeat(levels)}0${close.repeat(levels)}`;
}

/** `text` with `key` added again at the top level, so the object names it twice. */
function withDuplicateKey(json: string, key: string, value: unknown): string {
  const inner = json.trim().replace(/^\{/, "").replace(/\}$/, "");
  const duplicate = `${JSON.stringify(key)}:${JSON.stringify(value) ?? "null"}`;
  return inner === "" ? `{${duplicate},${duplicate}}` : `{${inner},${duplicate}}`;
}

/** Payloads that are not JSON, or JSON wrapped in something a parser may trip over. */
const notJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "{",
    "}",
    "{'title':'a'}",
    '{"title":"a",}',
    '{"title":"a"}garbage',
    '\ufeff{"title":"a"}',
    "NaN",
    "undefined",
    '{"title":"\\ud800"}',
    '{"title":"\\u0000"}',
    '{"title":"a\u0000b"}',
    '{"title":"\u0001"}',
    "\u0000",
    '{"a":1e999999}',
    `{"a":${"9".repeat(5000)}}`,
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    "title=a&url=https://x",
    "--x\r\nContent-Disposition: form-data; name=title\r\n\r\na\r\n--x--",
  ),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.jsonValue().map((value) => JSON.stringify(value).slice(0, -1)),
);

export type BodyCase = { kind: string; payload: string };

const describeBody = (kind: string) => (payload: string) => ({ kind, payload });

/**
 * Bodies for an operation. `valid` ones are objects of its schema's shape, though a string may
 * sit just past its length bound or hold NUL or markdown that is costly to convert. `hostile`
 * ones have a field of a wrong type, extra or duplicated keys, are JSON of any shape, deeply
 * nested, malformed, or past `bodyLimit` bytes.
 */
export function bodyPayloads(
  document: OpenApiDocument,
  schema: JsonSchema,
  hints: ValueHints,
  bodyLimit: number,
): { valid: fc.Arbitrary<BodyCase>; hostile: fc.Arbitrary<BodyCase> } {
  const validValue = schemaValue(document, schema, hints);
  const keys = Object.keys((schema.properties ?? {}) as Record<string, unknown>);
  const someKey = keys.length === 0 ? fc.string() : fc.constantFrom(...keys);
  const asObject = (value: unknown): Record<string, unknown> =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? { ...(value as Record<string, unknown>) }
      : {};
  const valid = validValue.map(asObject);
  const nestings = fc.constantFrom<Nesting>("array", "object", "mixed");
  const hostile = fc.oneof(
    {
      arbitrary: fc
        .tuple(valid, someKey, wrongType)
        .map(([value, key, wrong]) => JSON.stringify({ ...value, [key]: wrong }))
        .map(describeBody("wrong type")),
      weight: 4,
    },
    {
      arbitrary: fc
        .tuple(
          valid,
          fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "id")),
          fc.jsonValue(),
        )
        .map(([value, key, extra]) => {
          // Defined as an own property: `__proto__` as a key, not as the prototype.
          Object.defineProperty(value, key, { value: extra, enumerable: true });
          return JSON.stringify(value);
        })
        .map(describeBody("extra key")),
      weight: 2,
    },
    {
      arbitrary: fc
        .tuple(valid, someKey, fc.oneof(wrongType, validValue))
        .map(([value, key, again]) => withDuplicateKey(JSON.stringify(value), key, again))
        .map(describeBody("duplicate key")),
      weight: 2,
    },
    {
      arbitrary: fc
        .tuple(valid, someKey, nestings)
        .map(([value, key, kind]) =>
          JSON.stringify({ ...value, [key]: MARKER }).replace(
            JSON.stringify(MARKER),
            deeplyNested(NESTING, kind),
          ),
        )
        .map(describeBody("deeply nested field")),
      weight: 1,
    },
    {
      arbitrary: nestings
        .map((kind) => deeplyNested(NESTING, kind))
        .map(describeBody("deeply nested body")),
      weight: 1,
    },
    {
      arbitrary: fc
        .jsonValue({ maxDepth: 3 })
        .map((value) => JSON.stringify(value))
        .map(describeBody("any JSON")),
      weight: 2,
    },
    { arbitrary: notJson.map(describeBody("not JSON")), weight: 2 },
    {
      arbitrary: fc
        .tuple(valid, someKey, fc.constantFrom(bodyLimit + 1, bodyLimit * 2, bodyLimit - 64))
        .map(([value, key, size]) => {
          const text = JSON.stringify({ ...value, [key]: MARKER });
          const padding = "x".repeat(Math.max(0, size - text.length));
          return text.replace(JSON.stringify(MARKER), `"${padding}"`);
        })
        .map(describeBody("oversized")),
      weight: 1,
    },
  );
  return {
    valid: valid.map((value) => JSON.stringify(value)).map(describeBody("schema-shaped")),
    hostile,
  };
}

// --- URLs ---------------------------------------------------------------------------------

/**
 * A path segment or query value as it goes on the wire: percent-encoded when it is well formed,
 * or raw escapes no decoder accepts (a lone surrogate in WTF-8, a truncated or invalid escape).
 */
export type WireText = { text: string; wire: string };

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A lone surrogate as WTF-8 escapes: bytes no UTF-8 decoder accepts. */
function wtf8(surrogate: string): string {
  const unit = surrogate.charCodeAt(0);
  return [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
    .map((byte) => `%${byte.toString(16).toUpperCase()}`)
    .join("");
}

function encoded(text: string): WireText {
  const parts = text.split(LONE_SURROGATE);
  const surrogates = text.match(LONE_SURROGATE) ?? [];
  const wire = parts
    .map((part, index) => {
      const surrogate = surrogates[index];
      return encodeURIComponent(part) + (surrogate === undefined ? "" : wtf8(surrogate));
    })
    .join("");
  return { text, wire };
}

/** Garbage for a path segment or query value. */
export const hostileWireText: fc.Arbitrary<WireText> = fc.oneof(
  fc.oneof(hostileText, fc.string({ maxLength: 40 })).map(encoded),
  fc
    .constantFrom(
      "0",
      "-1",
      "1e999",
      "NaN",
      "Infinity",
      "0x10",
      "9".repeat(40),
      ".",
      "..",
      "{id}",
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      "00000000000000000000000000000000",
      "{00000000-0000-0000-0000-000000000000}",
      "x".repeat(2048),
      "x".repeat(2049),
      "é".repeat(1500),
      "0000-01-01",
      "2026-02-29",
      "2026-13-01",
      "2026-12-31T24:00:00Z",
      "2026-06-30T23:59:60Z",
      "2026-01-01T00:00:00",
      "2026-01-01 00:00:00Z",
      "+002026-01-01",
      "-000001-01-01T00:00:00Z",
      "275760-09-13T00:00:00.000Z",
    )
    .map(encoded),
  fc
    .constantFrom("%", "%zz", "%ED%A0%80", "%C0%AF", "%FF", "%00", "%2F", "%2e%2e", "a/b", "/", "")
    .map((wire) => ({ text: wire, wire })),
);

/** A valid value written out for the wire. */
export function onTheWire(value: unknown): WireText {
  return encoded(typeof value === "string" ? value : JSON.stringify(value));
}
