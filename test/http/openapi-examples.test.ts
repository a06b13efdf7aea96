import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Node = Record<string, unknown>;
type Found = { pointer: string; schemaPointer: string; value: unknown };

let t: TestApp;
let document: Node;
let ajv: Ajv2020;

beforeAll(async () => {
  t = await createTestApp();
  document = (await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json();
  ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addSchema(document, "openapi.json");
});
afterAll(() => t.close());

const isNode = (value: unknown): value is Node =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const pointerKey = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

const SCHEMA_KEYWORDS = ["type", "anyOf", "oneOf", "allOf", "$ref", "properties", "enum", "const"];

/**
 * Every example the document holds, wherever it is: a schema's `examples`, `example` and
 * `default` (checked against that schema), and a parameter's or media type's `example` and
 * `examples` map (checked against its `schema`).
 */
function examplesIn(node: unknown, pointer: string, found: Found[] = []): Found[] {
  if (Array.isArray(node)) {
    node.forEach((child, index) => {
      examplesIn(child, `${pointer}/${index}`, found);
    });
    return found;
  }
  if (!isNode(node)) return found;
  const isSchema = SCHEMA_KEYWORDS.some((keyword) => keyword in node);
  const hasSchema = isNode(node.schema);
  const own = (value: unknown, where: string) =>
    found.push({
      pointer: `${pointer}/${where}`,
      schemaPointer: hasSchema ? `${pointer}/schema` : pointer,
      value,
    });
  if (isSchema || hasSchema) {
    if ("example" in node) own(node.example, "example");
    if (isSchema && "default" in node) own(node.default, "default");
    if (isSchema && Array.isArray(node.examples)) {
      node.examples.forEach((value, index) => {
        own(value, `examples/${index}`);
      });
    } else if (hasSchema && isNode(node.examples)) {
      for (const [name, example] of Object.entries(node.examples)) {
        if (isNode(example) && "value" in example)
          own(example.value, `examples/${pointerKey(name)}`);
      }
    }
  }
  for (const [key, child] of Object.entries(node))
    examplesIn(child, `${pointer}/${pointerKey(key)}`, found);
  return found;
}

function problemsOf(found: Found): string[] {
  const validate = ajv.compile({ $ref: `openapi.json#${found.schemaPointer}` });
  if (validate(found.value)) return [];
  return (validate.errors ?? []).map(
    (error) =>
      `${found.pointer}: ${JSON.stringify(found.value)} ${error.instancePath} ${error.message}`,
  );
}

function resolve(node: unknown): Node | undefined {
  if (!isNode(node)) return undefined;
  if (typeof node.$ref !== "string") return node;
  const target = node.$ref
    .slice(2)
    .split("/")
    .reduce<unknown>(
      (at, key) => (isNode(at) ? at[key.replaceAll("~1", "/").replaceAll("~0", "~")] : undefined),
      document,
    );
  return resolve(target);
}

/**
 * The value the reference fills in for a schema when a developer opens "try it", in the
 * reference's own order (@scalar/api-reference's example generator): the first of `examples`,
 * then `example`, `default`, `const`, the first `enum` value, the first `anyOf` branch.
 * Anything else it makes up (an empty string for a date or an id), so each must have one.
 */
function prefilled(schemaNode: unknown): { value: unknown } | undefined {
  const schema = resolve(schemaNode);
  if (schema === undefined) return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length > 0)
    return { value: schema.examples[0] };
  for (const key of ["example", "default", "const"])
    if (schema[key] !== undefined) return { value: schema[key] };
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return { value: schema.enum[0] };
  if (Array.isArray(schema.anyOf)) return prefilled(schema.anyOf[0]);
  return undefined;
}

type Parameter = { name: string; in: string; example?: unknown; schema: unknown };

/** A parameter's own `example` comes first, then its schema's (same generator). */
function prefilledParameter(parameter: Parameter): { value: unknown } | undefined {
  return "example" in parameter ? { value: parameter.example } : prefilled(parameter.schema);
}

type Operation = {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: unknown }> };
};

function operations(): { label: string; pointer: string; operation: Operation }[] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(
    ([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        label: `${method.toUpperCase()} ${path}`,
        pointer: `/paths/${pointerKey(path)}/${method}`,
        operation,
      })),
  );
}

describe("the OpenAPI document's examples", () => {
  it("each validate against their schema: request bodies, parameters and responses", () => {
    const found = examplesIn(document, "");
    // The walk reaches ids, dates and whole request bodies, not just a handful.
    expect(found.length).toBeGreaterThan(30);
    expect(found.flatMap(problemsOf)).toEqual([]);
  });

  it("give every path and query parameter a value the reference fills in and the API accepts", () => {
    const problems = operations().flatMap(({ label, pointer, operation }) =>
      (operation.parameters ?? [])
        .map((parameter, index) => ({ parameter, index }))
        .filter(({ parameter }) => parameter.in === "path" || parameter.in === "query")
        .flatMap(({ parameter, index }) => {
          const value = prefilledParameter(parameter);
          if (value === undefined) return [`${label} ${parameter.name}: no example`];
          return problemsOf({
            pointer: `${label} ${parameter.name}`,
            schemaPointer: `${pointer}/parameters/${index}/schema`,
            value: value.value,
          });
        }),
    );
    expect(problems).toEqual([]);
  });

  it("give every request body a whole example the API accepts as sent", () => {
    const problems = operations().flatMap(({ label, pointer, operation }) =>
      Object.entries(operation.requestBody?.content ?? {}).flatMap(([type, media]) => {
        const value = prefilled(media.schema);
        if (value === undefined) return [`${label} ${type}: no example`];
        return problemsOf({
          pointer: `${label} ${type}`,
          schemaPointer: `${pointer}/requestBody/content/${pointerKey(type)}/schema`,
          value: value.value,
        });
      }),
    );
    expect(problems).toEqual([]);
  });
});
