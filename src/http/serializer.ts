import fastJson from "fast-json-stringify";
import type { FastifySerializerCompiler } from "fastify";
import { z } from "zod";

type JsonSchema = { [keyword: string]: unknown };

const isObject = (value: unknown): value is JsonSchema =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * The route's zod schema as the JSON Schema fast-json-stringify compiles: references inlined,
 * `T | null` spelt as a type list (which it writes without trying each branch in turn), and any
 * other union (the free-form JSON of a spec value) left to JSON.stringify.
 */
function forStringify(schema: unknown, definitions: Record<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((entry) => forStringify(entry, definitions));
  if (!isObject(schema)) return schema;
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.replace("#/definitions/", "");
    return forStringify(
      { ...(definitions[name] as JsonSchema), ...withoutRef(schema) },
      definitions,
    );
  }
  if (Array.isArray(schema.anyOf)) return nullableOrAny(schema, definitions);
  const result: JsonSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === "$schema" || keyword === "definitions" || keyword === "pattern") continue;
    result[keyword] =
      keyword === "properties" && isObject(value)
        ? Object.fromEntries(
            Object.entries(value).map(([name, property]) => [
              name,
              forStringify(property, definitions),
            ]),
          )
        : forStringify(value, definitions);
  }
  return result;
}

function withoutRef(schema: JsonSchema): JsonSchema {
  const { $ref: _ref, ...rest } = schema;
  return rest;
}

function nullableOrAny(schema: JsonSchema, definitions: Record<string, unknown>): unknown {
  const branches = schema.anyOf as unknown[];
  const others = branches.filter((branch) => !(isObject(branch) && branch.type === "null"));
  const [only] = others;
  if (others.length !== 1 || branches.length !== 2) return {};
  const inner = forStringify(only, definitions) as JsonSchema;
  if (typeof inner.type !== "string") return {};
  return { ...inner, type: [inner.type, "null"] };
}

/**
 * Responses are written by fast-json-stringify from the route's own zod schema (the one the
 * OpenAPI document shows): fields the schema does not name never leave, a missing required one
 * is an error, and no value is validated again on the way out (the tests check every response
 * against the served document instead).
 */
export const responseSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) => {
  // Compiled on a route's first answer of that status, not at start: a process builds only the
  // writers it uses, which keeps them out of the cold start and out of an idle process's heap.
  let serialize: ((data: unknown) => string) | undefined;
  return (data) => {
    serialize ??= compile(schema);
    return serialize(data);
  };
};

function compile(schema: z.ZodType): (data: unknown) => string {
  const jsonSchema = z.toJSONSchema(schema, { io: "output", target: "draft-7" }) as JsonSchema;
  const definitions = isObject(jsonSchema.definitions) ? jsonSchema.definitions : {};
  return fastJson(forStringify(jsonSchema, definitions) as Parameters<typeof fastJson>[0]);
}
