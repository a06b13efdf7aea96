import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { Principal } from "../../core/principal.js";
import type { JsonText } from "../../db/json-rows.js";
import { principalOf } from "../../http/auth.js";
import { sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { type Me, meSchema } from "./schemas.js";

export const meRoutes: FastifyPluginAsyncZod = async (app) => {
  // The answer is the principal's own, and the principal cache hands out one object per token
  // until something about it changes: its bytes are written once, not on every request.
  const answers = new WeakMap<Principal, JsonText<Me>>();
  app.get(
    "/me",
    apiRoute({
      access: "any-token",
      operationId: "getMe",
      summary: "The token's organisation and scopes",
      tags: ["Organisation"],
      data: meSchema,
    }),
    async (request, reply) => {
      const principal = principalOf(request);
      let answer = answers.get(principal);
      if (answer === undefined) {
        const { organization, scopes, pluginId } = principal;
        answer = JSON.stringify(meSchema.parse({ organization, scopes, pluginId }));
        answers.set(principal, answer);
      }
      return sendJsonData(reply, answer);
    },
  );
};
