/**
 * The developer's one-time setup, done through the same admin-area forms a person fills in
 * (Integrations: OAuth apps, Webhooks): while the embedded service runs, the admin area is the only way to
 * register an OAuth client or a webhook (`svc` cannot open the database the service holds).
 * A real addon does this once by hand and keeps the client id and secrets in its configuration.
 */
export class AdminSession {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly serviceUrl: string) {}

  async signIn(email: string, password: string): Promise<void> {
    const response = await this.submit("/login", { email, password });
    if (response.status !== 303) {
      throw new Error(
        `Signing in as ${email} was refused (${response.status}): ${alertOf(await response.text())}`,
      );
    }
  }

  /** Registers a confidential OAuth client; the secret is shown this once. */
  async registerAddon(org: string, name: string, redirectUri: string) {
    const page = await this.formResult(`/admin/${org}/addons`, {
      name,
      redirect_uris: redirectUri,
    });
    return {
      clientId: inputValue(page, "client-id"),
      clientSecret: inputValue(page, "client-secret"),
    };
  }

  /** Registers a webhook for these event types; the signing secret is shown this once. */
  async registerWebhook(org: string, url: string, events: readonly string[]) {
    const page = await this.formResult(`/admin/${org}/webhooks`, { url, events: [...events] });
    const webhookId = /\/webhooks\/([0-9a-f-]{36})"/.exec(page)?.[1];
    if (webhookId === undefined) throw new Error("The webhook page shows no webhook id");
    return { webhookId, webhookSecret: inputValue(page, "signing-secret") };
  }

  /** Posts a form of that page (with its CSRF token) and returns the page it answers with. */
  private async formResult(path: string, fields: Record<string, string | string[]>) {
    const response = await this.submit(path, fields);
    const page = await response.text();
    if (response.status !== 200) {
      throw new Error(`${path} refused the form (${response.status}): ${alertOf(page)}`);
    }
    return page;
  }

  private async submit(path: string, fields: Record<string, string | string[]>) {
    const form = new URLSearchParams({ _csrf: await this.csrfTokenOf(path) });
    for (const [name, value] of Object.entries(fields)) {
      for (const entry of [value].flat()) form.append(name, entry);
    }
    return this.request(path, { method: "POST", body: form });
  }

  private async csrfTokenOf(path: string): Promise<string> {
    const response = await this.request(path);
    const token = /name="_csrf" value="([^"]+)"/.exec(await response.text())?.[1];
    if (token === undefined) throw new Error(`${path} (${response.status}) shows no form`);
    return token;
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(new URL(path, this.serviceUrl), {
      ...init,
      redirect: "manual",
      headers: { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ") },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const separator = pair.indexOf("=");
      if (separator > 0) this.cookies.set(pair.slice(0, separator), pair.slice(separator + 1));
    }
    return response;
  }
}

/** The value of a read-only `<input id=…>` on a "shown once" page. */
function inputValue(page: string, id: string): string {
  const value = new RegExp(`id="${id}"[^>]*\\bvalue="([^"]*)"`).exec(page)?.[1];
  if (value === undefined) throw new Error(`The page shows no ${id}`);
  return value;
}

function alertOf(page: string): string {
  return /role="alert">([^<]*)</.exec(page)?.[1] ?? "no reason shown";
}
