import type { FastifyInstance, FastifySchemaValidationError } from "fastify";
import { validatorCompiler } from "fastify-type-provider-zod";
import type { ZodType } from "zod";
import { NotFound } from "../core/errors.js";

type ValidationOutcome = { error?: FastifySchemaValidationError[]; value?: unknown };

// Marks a request whose path parameters cannot name anything (an id that is not a UUID).
const NAMES_NOTHING = Symbol("names nothing");

/**
 * A path id that cannot exist is a 404 like any unknown id, but only after the body and query
 * were validated, so the spec's order holds (401, 403, 400, then 404): path parameters that fail
 * their schema are let through marked, and the 404 is raised once validation is over.
 */
export function deferNotFoundForImpossibleIds(app: FastifyInstance): void {
  app.setValidatorCompiler<ZodType>((route) => {
    const validate = validatorCompiler(route);
    if (route.httpPart !== "params") return validate;
    return (data: unknown) => {
      const result = validate(data) as ValidationOutcome;
      return result.error ? { value: { [NAMES_NOTHING]: true } } : result;
    };
  });
  app.addHook("preHandler", async (request) => {
    const params = request.params;
    if (typeof params === "object" && params !== null && NAMES_NOTHING in params) {
      throw new NotFound();
    }
  });
}
