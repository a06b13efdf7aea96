import createClient, {
  type Client,
  type ClientPathsWithMethod,
  type FetchResponse,
  type HeadersOptions,
  type MaybeOptionalInit,
  type Middleware,
  mergeHeaders,
} from "openapi-fetch";
import { apiErrorOf } from "./api-error.js";
import type { paths } from "./openapi.js";
import { retryRateLimited } from "./rate-limit-retry.js";

export type WorkspaceClientOptions = {
  /** The API's root, ending in /api/v1: `http://localhost:3000/api/v1`. */
  baseUrl: string;
  /** A `svc_live_` token, or a function asked for one before each request (an OAuth token that is refreshed). */
  token: string | (() => string | Promise<string>);
  /** How many times a request answered 429 is sent again after its Retry-After; 3 unless set. */
  maxRetries?: number;
  /** The fetch to send requests with; the global one unless set. */
  fetch?: typeof fetch;
};

type Method = "get" | "post" | "put" | "patch" | "delete";

/** The raw openapi-fetch client: the same requests, answered with `{ data, error, response }`. */
export type RawWorkspaceClient = Client<paths, "application/json">;

type PathWith<M extends Method> = ClientPathsWithMethod<RawWorkspaceClient, M>;

/** The `data` of an operation's success envelope (`{ ok: true, data }`). */
type DataOf<Operation extends Record<string | number, unknown>> =
  NonNullable<FetchResponse<Operation, unknown, "application/json">["data"]> extends infer Body
    ? Body extends { data: infer Data }
      ? Data
      : undefined
    : never;

/** openapi-fetch's init (params, body, headers, signal…), optional when nothing in it is required. */
type InitArgument<Init, Extra = unknown> = undefined extends Init
  ? [init?: NonNullable<Init> & Extra]
  : [init: Init & Extra];

type UnwrappedMethod<M extends Method, Extra = unknown> = <P extends PathWith<M>>(
  path: P,
  ...init: InitArgument<MaybeOptionalInit<paths[P], M>, Extra>
) => Promise<DataOf<paths[P][M] & Record<string | number, unknown>>>;

export type PostOptions = {
  /** Makes the POST safe to send again; the client sends a random one when none is given. */
  idempotencyKey?: string;
};

export type WorkspaceClient = {
  get: UnwrappedMethod<"get">;
  post: UnwrappedMethod<"post", PostOptions>;
  put: UnwrappedMethod<"put">;
  patch: UnwrappedMethod<"patch">;
  delete: UnwrappedMethod<"delete">;
  /** The underlying openapi-fetch client, with the same token, Idempotency-Key and 429 retries. */
  raw: RawWorkspaceClient;
};

const IDEMPOTENCY_KEY = "Idempotency-Key";
const DEFAULT_MAX_RETRIES = 3;

function authorization(token: WorkspaceClientOptions["token"]): Middleware {
  return {
    async onRequest({ request }) {
      const value = typeof token === "function" ? await token() : token;
      request.headers.set("Authorization", `Bearer ${value}`);
    },
  };
}

/**
 * Every POST carries an Idempotency-Key set before the fetch, so whatever sends it again below the
 * client (its 429 retries, a retrying `fetch`) sends the same key and the write happens once. A
 * caller that repeats a call itself passes its own `idempotencyKey`.
 */
const idempotencyKeyOnPosts: Middleware = {
  onRequest({ request }) {
    if (request.method === "POST" && !request.headers.has(IDEMPOTENCY_KEY)) {
      request.headers.set(IDEMPOTENCY_KEY, crypto.randomUUID());
    }
  },
};

type RawResult = { data?: unknown; error?: unknown; response: Response };
type RawInit = { headers?: HeadersOptions; [option: string]: unknown };
/** `raw.request` without its path-keyed types, which the unwrapped methods declare themselves. */
type UntypedRequest = (method: Method, path: string, init?: RawInit) => Promise<RawResult>;

/** The envelope's `data`, or the failure as an ApiError. */
function unwrap({ data, error, response }: RawResult): unknown {
  if (!response.ok) throw apiErrorOf(response, error);
  return (data as { data?: unknown } | undefined)?.data;
}

/**
 * A client of the workspace API: path-keyed methods typed from the OpenAPI document, which
 * answer the envelope's `data` or throw an `ApiError`.
 */
export function createWorkspaceClient(options: WorkspaceClientOptions): WorkspaceClient {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new RangeError(`maxRetries must be a whole number, 0 or more (got ${maxRetries})`);
  }
  const raw = createClient<paths, "application/json">({
    baseUrl: options.baseUrl,
    fetch: retryRateLimited(options.fetch ?? fetch, maxRetries),
  });
  raw.use(authorization(options.token), idempotencyKeyOnPosts);
  const request = raw.request as unknown as UntypedRequest;
  const call =
    (method: Method) =>
    async (path: string, init: RawInit & PostOptions = {}): Promise<unknown> => {
      const { idempotencyKey, ...rest } = init;
      const headers =
        idempotencyKey === undefined
          ? rest.headers
          : mergeHeaders(rest.headers, { [IDEMPOTENCY_KEY]: idempotencyKey });
      return unwrap(await request(method, path, { ...rest, headers }));
    };
  // The methods' types come from WorkspaceClient; `call` checks nothing itself.
  return {
    get: call("get"),
    post: call("post"),
    put: call("put"),
    patch: call("patch"),
    delete: call("delete"),
    raw,
  } as WorkspaceClient;
}
