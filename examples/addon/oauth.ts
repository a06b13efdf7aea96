import { createHash, randomBytes } from "node:crypto";

/** The parts of the RFC 8414 metadata document the addon uses. */
export type AuthorizationServer = {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
};

export type OAuthClient = { clientId: string; clientSecret: string; redirectUri: string };

/** One authorization request: what the callback must match, and the PKCE verifier it proves. */
export type PendingAuthorization = { url: string; state: string; codeVerifier: string };

export type TokenResponse = { access_token: string; token_type: string; scope: string };

export async function discover(serviceUrl: string): Promise<AuthorizationServer> {
  const response = await fetch(new URL("/.well-known/oauth-authorization-server", serviceUrl));
  if (!response.ok) throw new Error(`No OAuth metadata at ${serviceUrl} (${response.status})`);
  return (await response.json()) as AuthorizationServer;
}

/** The URL the admin opens, with a fresh `state` and a PKCE S256 challenge (RFC 7636 §4). */
export function startAuthorization(
  server: AuthorizationServer,
  client: OAuthClient,
  scope: string,
): PendingAuthorization {
  const state = randomBytes(16).toString("base64url");
  const codeVerifier = randomBytes(32).toString("base64url");
  const url = new URL(server.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    scope,
    state,
    code_challenge: createHash("sha256").update(codeVerifier).digest("base64url"),
    code_challenge_method: "S256",
  }).toString();
  return { url: url.href, state, codeVerifier };
}

/**
 * The code from the callback's query, once it is known to answer our request: `state` first
 * (the spec's order), then `iss` (RFC 9207, against a mix-up with another server).
 */
export function codeFromCallback(
  server: AuthorizationServer,
  pending: PendingAuthorization,
  query: URLSearchParams,
): string {
  if (query.get("state") !== pending.state) throw new Error("The callback's state is not ours");
  if (query.get("iss") !== server.issuer) throw new Error("The callback comes from another issuer");
  const error = query.get("error");
  if (error !== null) throw new Error(`The authorization was refused: ${error}`);
  const code = query.get("code");
  if (code === null) throw new Error("The callback carries no code");
  return code;
}

/** The token request: the client's secret by HTTP Basic, and the PKCE verifier. */
export async function exchangeCode(
  server: AuthorizationServer,
  client: OAuthClient,
  pending: PendingAuthorization,
  code: string,
): Promise<TokenResponse> {
  // RFC 6749 §2.3.1: form-encode id and secret before joining them for Basic.
  const basic = Buffer.from(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
  ).toString("base64");
  const response = await fetch(server.token_endpoint, {
    method: "POST",
    headers: { authorization: `Basic ${basic}` },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: client.redirectUri,
      code_verifier: pending.codeVerifier,
    }),
  });
  const body = (await response.json()) as Partial<TokenResponse> & { error?: string };
  if (!response.ok || body.access_token === undefined) {
    throw new Error(`The token endpoint refused the code (${response.status} ${body.error})`);
  }
  return body as TokenResponse;
}
