import { pino } from "pino";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import { createDeliveryWorker, type DeliveryWorker } from "../../src/webhooks/delivery-worker.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { launchBrowser, type ServedApp, serveTestApp, signedInContext } from "./browser.js";

type StorageState = Awaited<ReturnType<BrowserContext["storageState"]>>;

export type OAuthWorkspaces = Awaited<ReturnType<typeof importOAuthWorkspaces>>;

/**
 * What a browser test of the admin area works with: one Chromium for the file, the real app on
 * a real port with the OAuth workspaces (acme, devco) imported, and its members' pages.
 */
export type AdminBrowser = {
  browser: Browser;
  served: ServedApp;
  workspaces: OAuthWorkspaces;
  /**
   * A page in a fresh context signed in as the member (acme's admin by default). The member
   * signs in once per file; later contexts share that session's cookies, so a test that signs
   * out must use `anonymousPage` and sign in itself.
   */
  pageAs(email?: string): Promise<Page>;
  /** A fresh context signed in as nobody. */
  newContext(): Promise<BrowserContext>;
  anonymousPage(): Promise<Page>;
  /** Closes every context opened so far (each test's, from `afterEach`). */
  closePages(): Promise<void>;
  close(): Promise<void>;
};

export type AdminBrowserOptions = {
  env?: Record<string, string>;
  /**
   * Deliveries sent as `svc start` sends them: a worker on the app's own in-process queue, with
   * no quick retries, so a failed attempt waits for the daily pass.
   */
  deliveries?: boolean;
};

export async function startAdminBrowser(options: AdminBrowserOptions = {}): Promise<AdminBrowser> {
  const logger = pino({ level: "silent" });
  const queue = options.deliveries ? createInProcessQueue<WorkspaceJobs>(logger) : undefined;
  const env = options.deliveries
    ? { WEBHOOK_QUICK_RETRIES: "", ...options.env }
    : (options.env ?? {});
  const [browser, served] = await Promise.all([
    launchBrowser(),
    serveTestApp(env, queue === undefined ? {} : { queue }),
  ]);
  let worker: DeliveryWorker | undefined;
  if (queue !== undefined) {
    worker = createDeliveryWorker({ db: served.db, config: served.config, logger, queue });
    await queue.startWorker(worker.handlers);
  }
  const workspaces = await importOAuthWorkspaces(served.db);
  const contexts: BrowserContext[] = [];
  const closePages = async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
  };
  const sessions = new Map<string, StorageState>();
  const newContext = async (storageState?: StorageState) => {
    const context = await browser.newContext(storageState === undefined ? {} : { storageState });
    contexts.push(context);
    return context;
  };

  return {
    browser,
    served,
    workspaces,
    async pageAs(email = "admin@acme.example") {
      let session = sessions.get(email);
      if (session === undefined) {
        const signedIn = await signedInContext(browser, served.url, email, PASSWORD);
        session = await signedIn.context.storageState();
        sessions.set(email, session);
        await signedIn.context.close();
      }
      return (await newContext(session)).newPage();
    },
    newContext: () => newContext(),
    async anonymousPage() {
      return (await newContext()).newPage();
    },
    closePages,
    async close() {
      await closePages();
      await browser.close();
      await worker?.close();
      await queue?.close();
      await served.close();
    },
  };
}
