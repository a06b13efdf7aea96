// The typed client of the workspace API, exported as `workspace-service/client`. It must stay
// usable by an addon on its own: nothing here imports the server (a lint rule checks).
export { ApiError, type ApiErrorCode } from "./api-error.js";
export type * from "./openapi.js";
export {
  createWorkspaceClient,
  type PostOptions,
  type RawWorkspaceClient,
  type WorkspaceClient,
  type WorkspaceClientOptions,
} from "./workspace-client.js";
