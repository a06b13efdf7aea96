// The typed client of the workspace API, the package `@workspace-service/client`. It must stay
// usable by an addon on its own: it imports only openapi-fetch (its tsconfig and a lint rule check).
export { ApiError, type ApiErrorCode } from "./api-error.js";
export type * from "./openapi.js";
export {
  createWorkspaceClient,
  type PostOptions,
  type RawWorkspaceClient,
  type WorkspaceClient,
  type WorkspaceClientOptions,
} from "./workspace-client.js";
