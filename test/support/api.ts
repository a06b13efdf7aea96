import type { ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

export type ApiResponse = {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
  raw: string;
};

export type RequestOptions = {
  token?: string;
  body?: unknown;
  /** Sent as is, for malformed or oversized bodies. */
  payload?: string;
  headers?: Record<string, string>;
};

type OpenApiDocument = {
  paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
};

const validators = new WeakMap<
  FastifyInstance,
  (method: string, url: string, status: number) => ValidateFunction
>();

function templateToRegExp(template: string): RegExp {
  const pattern = template
    .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    .replace(/\\\{[^}]+\\\}/g, "[^/]+");
  return new RegExp(`^${pattern}$`);
}

/** Compiles the served document once per app; every later response is checked against it. */
async function validatorFor(app: FastifyInstance) {
  const cached = validators.get(app);
  if (cached) return cached;
  const response = await app.inject({ method: "GET", url: "/api/v1/openapi.json" });
  expect(response.statusCode).toBe(200);
  const document = response.json() as OpenApiDocument;
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addSchema(document, "openapi.json");
  const routes = Object.keys(document.paths).map((template) => ({
    template,
    regexp: templateToRegExp(template),
  }));
  const compiled = new Map<string, ValidateFunction>();
  const lookup = (method: string, url: string, status: number): ValidateFunction => {
    const path = url.replace(/^\/api\/v1/, "").split("?")[0] ?? "";
    const route = routes.find(
      (candidate) =>
        candidate.regexp.test(path) && document.paths[candidate.template]?.[method.toLowerCase()],
    );
    // Unknown paths answer with the failure envelope, which every operation documents.
    const template = route?.template;
    const operation =
      template === undefined ? undefined : document.paths[template]?.[method.toLowerCase()];
    const key = `${method} ${template} ${status}`;
    const existing = compiled.get(key);
    if (existing) return existing;
    const pointer =
      template === undefined
        ? "#/components/schemas/Failure"
        : `#/paths/${template.replaceAll("~", "~0").replaceAll("/", "~1")}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
    if (template !== undefined && operation?.responses?.[String(status)] === undefined) {
      throw new Error(
        `${method} ${template} answered ${status}, which its OpenAPI operation does not document`,
      );
    }
    const validate = ajv.compile({ $ref: `openapi.json${pointer}` });
    compiled.set(key, validate);
    return validate;
  };
  validators.set(app, lookup);
  return lookup;
}

/**
 * Every API test goes through this: it sends the request with `app.inject` and checks the
 * response body against that operation's schema in the served OpenAPI document.
 */
export async function api(
  app: FastifyInstance,
  method: Method,
  url: string,
  options: RequestOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const hasJson = options.body !== undefined;
  if (hasJson && headers["content-type"] === undefined)
    headers["content-type"] = "application/json";
  const response = await app.inject({
    method,
    url,
    headers,
    payload: options.payload ?? (hasJson ? JSON.stringify(options.body) : undefined),
  });
  const raw = response.body;
  const body = raw === "" ? undefined : JSON.parse(raw);
  if (
    url.startsWith("/api/v1/") &&
    !url.startsWith("/api/v1/openapi.json") &&
    !url.startsWith("/api/v1/docs")
  ) {
    const validate = (await validatorFor(app))(method, url, response.statusCode);
    if (!validate(body)) {
      throw new Error(
        `${method} ${url} → ${response.statusCode}: body does not match the OpenAPI schema: ${JSON.stringify(validate.errors)}\n${raw}`,
      );
    }
  }
  return { status: response.statusCode, body, headers: response.headers, raw };
}
