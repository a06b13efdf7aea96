import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { principalOf } from "../../http/auth.js";
import { ok } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { meSchema } from "./schemas.js";

export const meRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/me",
    apiRoute({
      access: "any-token",
      operationId: "getMe",
      summary: "The token's organisation and scopes",
      tags: ["Organisation"],
      data: meSchema,
    }),
    async (request) => {
      const { organization, scopes, pluginId } = principalOf(request);
      return ok({ organization, scopes, pluginId });
    },
  );
};
