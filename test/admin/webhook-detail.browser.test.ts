import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { webhookSubscriptions, webhooks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook, registrationSettingsOf } from "../../src/webhooks/service.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import { submitForNotice } from "../support/browser.js";
import { recordDelivery as recordDeliveryRow } from "../support/deliveries.js";
import { eventually } from "../support/eventually.js";

let admin: AdminBrowser;
let organizationId: string;
let base: string;

/** A receiver whose answer is HTML with a script in it, as a hostile or broken one might send. */
const HOSTILE_BODY =
  '<script>document.title = "pwned"</script><b id="injected-response">bold</b> & <i>more</i>';
let hostile: Server;
let hostileUrl: string;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  hostile = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      response.writeHead(500, { "content-type": "text/html" });
      response.end(HOSTILE_BODY);
    });
  });
  await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", () => resolve()));
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/hook`;
  admin = await startAdminBrowser({ deliveries: true });
  organizationId = admin.workspaces.acme.organization.id;
  base = `${admin.served.url}/admin/acme`;
});
afterEach(() => admin.closePages());
afterAll(async () => {
  await admin?.close();
  await new Promise<void>((resolve) => (hostile ? hostile.close(() => resolve()) : resolve()));
});

/** A webhook row written directly: these tests never send to it. */
async function quietWebhook(url: string): Promise<string> {
  const [webhook] = await admin.served.db
    .insert(webhooks)
    .values({ organizationId, url, secretCiphertext: "never-used" })
    .returning({ id: webhooks.id });
  if (webhook === undefined) throw new Error("no webhook");
  await admin.served.db.insert(webhookSubscriptions).values([
    { webhookId: webhook.id, eventType: "task.created", position: 0 },
    { webhookId: webhook.id, eventType: "page.updated", position: 1 },
  ]);
  return webhook.id;
}

type Status = "pending" | "delivered" | "failed" | "exhausted";
type Recorded = { id: string; createdAt: Date; status: Status; type: string };

/** A delivery as the relay records it, at a chosen time and in a chosen state. */
async function recordDelivery(
  webhookId: string,
  input: { createdAt: Date; status: Status; type?: string; diff?: Record<string, unknown> },
): Promise<Recorded> {
  const type = input.type ?? "task.created";
  const id = await recordDeliveryRow(admin.served.db, {
    organizationId,
    webhookId,
    ...input,
    type,
  });
  return { id, createdAt: input.createdAt, status: input.status, type };
}

type Bar = { start: string; total: number; delivered: number; failed: number; pending: number };

function barsOf(page: Page, chart: string): Promise<Bar[]> {
  return page.locator(`#${chart} g.bar`).evaluateAll((groups) =>
    groups.map((group) => ({
      start: group.getAttribute("data-start") ?? "",
      total: Number(group.getAttribute("data-total")),
      delivered: Number(group.getAttribute("data-delivered")),
      failed: Number(group.getAttribute("data-failed")),
      pending: Number(group.getAttribute("data-pending")),
    })),
  );
}

/** What a bar starting at `start` and `size` ms long must count, from the recorded deliveries. */
function expectedBar(recorded: Recorded[], start: string, size: number): Bar {
  const from = Date.parse(start);
  const inside = recorded.filter(
    (delivery) =>
      delivery.createdAt.getTime() >= from && delivery.createdAt.getTime() < from + size,
  );
  const count = (statuses: Status[]) =>
    inside.filter((delivery) => statuses.includes(delivery.status)).length;
  return {
    start,
    total: inside.length,
    delivered: count(["delivered"]),
    failed: count(["failed", "exhausted"]),
    pending: count(["pending"]),
  };
}

/** Follows a link and waits for the page it leads to. */
async function follow(page: Page, name: RegExp): Promise<void> {
  const before = page.url();
  await page.getByRole("link", { name }).click();
  await page.waitForURL((url) => url.href !== before);
}

const logIds = (page: Page) =>
  page
    .locator("tr.delivery-row")
    .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-delivery")));

describe("the webhook page", () => {
  it("draws one bar per hour and per day, each counting the deliveries recorded in it", async () => {
    const webhookId = await quietWebhook("https://charts.example/hook");
    const ago = (ms: number) => new Date(Date.now() - ms);
    const minutes = 60_000;
    const plan: [number, Status, number][] = [
      [10 * minutes, "delivered", 2],
      [130 * minutes, "delivered", 3],
      [130 * minutes, "failed", 1],
      [300 * minutes, "pending", 2],
      [300 * minutes, "exhausted", 1],
      [3 * 24 * 60 * minutes, "delivered", 4],
      [10 * 24 * 60 * minutes, "delivered", 5],
    ];
    const recorded: Recorded[] = [];
    for (const [age, status, count] of plan) {
      for (let i = 0; i < count; i++)
        recorded.push(await recordDelivery(webhookId, { createdAt: ago(age), status }));
    }

    const page = await admin.pageAs();
    await page.goto(`${base}/webhooks/${webhookId}`);
    const hours = await barsOf(page, "chart-hours");
    const days = await barsOf(page, "chart-days");
    expect(hours).toHaveLength(24);
    expect(days).toHaveLength(7);
    expect(hours).toEqual(hours.map((bar) => expectedBar(recorded, bar.start, 3_600_000)));
    expect(days).toEqual(days.map((bar) => expectedBar(recorded, bar.start, 86_400_000)));
    // Every delivery younger than the windows is in exactly one bar; the 10-day-old ones in none.
    const sum = (bars: Bar[]) => bars.reduce((total, bar) => total + bar.total, 0);
    expect(sum(days)).toBe(recorded.length - 5);
    expect(sum(hours)).toBe(2 + 4 + 3);

    // The drawn segments: one rect per non-empty state, the tallest bar filling the plot.
    const tallest = hours.reduce((best, bar) => (bar.total > best.total ? bar : best));
    const rects = page.locator(`#chart-hours g.bar[data-start="${tallest.start}"] rect`);
    const kinds = await rects.evaluateAll((nodes) =>
      nodes.map((node) => node.getAttribute("class")),
    );
    expect(kinds).toEqual(
      [
        tallest.delivered > 0 ? "bar--delivered" : null,
        tallest.failed > 0 ? "bar--failed" : null,
        tallest.pending > 0 ? "bar--pending" : null,
      ].filter((kind) => kind !== null),
    );
    const heights = await rects.evaluateAll((nodes) =>
      nodes.map((node) => Number(node.getAttribute("height"))),
    );
    expect(Math.round(heights.reduce((total, height) => total + height, 0))).toBe(100);

    // The figures above the 7-day chart: 9 delivered, 2 failed (one exhausted), 2 pending; the
    // success rate counts the settled ones only.
    const days7 = page.locator("figure", { has: page.locator("#chart-days") });
    expect(await days7.locator('[data-stat="total"]').innerText()).toBe("13");
    expect(await days7.locator('[data-stat="failed"]').innerText()).toBe("2");
    expect(await days7.locator('[data-stat="rate"]').innerText()).toBe("81.8%");
  });

  it("pages through the log newest first and filters it by status and event type", async () => {
    const webhookId = await quietWebhook("https://log.example/hook");
    const start = Date.now() - 3_600_000;
    const recorded: Recorded[] = [];
    for (let i = 0; i < 60; i++) {
      // Five pairs share a creation time: the page boundary must not lose or repeat one.
      const createdAt = new Date(start + (i % 12 === 1 ? i - 1 : i) * 1_000);
      const status: Status = i % 4 === 0 ? "failed" : "delivered";
      const type = i % 3 === 0 ? "page.updated" : "task.created";
      recorded.push(await recordDelivery(webhookId, { createdAt, status, type }));
    }
    const newestFirst = [...recorded].sort(
      (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1),
    );

    const page = await admin.pageAs();
    await page.goto(`${base}/webhooks/${webhookId}`);
    const seen: (string | null)[][] = [await logIds(page)];
    expect(await page.getByRole("link", { name: /Newer/ }).count()).toBe(0);
    while ((await page.getByRole("link", { name: /^Older/ }).count()) > 0) {
      await follow(page, /^Older/);
      seen.push(await logIds(page));
    }
    expect(seen.map((ids) => ids.length)).toEqual([25, 25, 10]);
    expect(seen.flat()).toEqual(newestFirst.map((delivery) => delivery.id));
    await follow(page, /Newer/);
    expect(await logIds(page)).toEqual(seen[1]);

    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=failed/);
    const failed = newestFirst.filter((delivery) => delivery.status === "failed");
    expect(await logIds(page)).toEqual(failed.map((delivery) => delivery.id));

    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Event type").selectOption("page.updated");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/event=page\.updated/);
    const pages = newestFirst.filter((delivery) => delivery.type === "page.updated");
    expect(await logIds(page)).toEqual(pages.map((delivery) => delivery.id));

    // A filtered log pages with its filter kept.
    await page.getByLabel("Event type").selectOption("");
    await page.getByLabel("Status").selectOption("delivered");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=delivered/);
    const delivered = newestFirst.filter((delivery) => delivery.status === "delivered");
    const firstPage = await logIds(page);
    await follow(page, /^Older/);
    expect(page.url()).toContain("status=delivered");
    expect([...firstPage, ...(await logIds(page))]).toEqual(delivered.map((d) => d.id));

    // A status that does not exist is refused, not ignored.
    const refused = await page.goto(`${base}/webhooks/${webhookId}?status=bogus`);
    expect(refused?.status()).toBe(400);
  });

  it("shows every attempt with its response and headers as text, never as markup", async () => {
    const { id: webhookId, secret } = await createWebhook(
      admin.served.db,
      systemAudit,
      registrationSettingsOf(admin.served.config),
      { organizationId, url: hostileUrl, events: ["task.created"] },
    );
    const hostileTitle =
      '</pre><script>document.title = "pwned"</script><img id="injected-payload" src="x">';
    await recordDelivery(webhookId, {
      createdAt: new Date(Date.now() - 60_000),
      status: "delivered",
      diff: { title: hostileTitle },
    });

    const page = await admin.pageAs();
    await page.goto(`${base}/webhooks/${webhookId}`);
    await submitForNotice(page, page.getByRole("button", { name: "Send a ping" }), "Ping queued");
    await eventually(() => received.length === 1);
    const row = page.locator("tr.delivery-row", { hasText: "change.created" });
    await eventually(async () => {
      await page.reload();
      return /failed\s+1\s+500/.test(await row.innerText());
    });

    const detail = page.locator(
      `tr.delivery-detail[data-delivery="${await row.getAttribute("data-delivery")}"]`,
    );
    await detail.getByText("Attempts, payload and headers").click();
    expect(await detail.getByRole("heading", { name: "Attempt 1: HTTP 500" }).count()).toBe(1);
    expect(await detail.locator("pre.response-snippet").innerText()).toBe(HOSTILE_BODY);
    expect(await detail.locator(".attempt").innerText()).toMatch(/took \d+ ms/);
    const headers = Object.fromEntries(
      await detail
        .locator("table.request-headers tbody tr")
        .evaluateAll((rows) =>
          rows.map((tr) => [
            tr.querySelector("th")?.textContent ?? "",
            tr.querySelector("td")?.textContent ?? "",
          ]),
        ),
    );
    const [sent] = received;
    expect(headers["X-Service-Signature"]).toBe(sent?.headers["x-service-signature"]);
    expect(headers["X-Service-Timestamp"]).toBe(sent?.headers["x-service-timestamp"]);
    expect(headers["X-Service-Delivery"]).toBe(sent?.headers["x-service-delivery"]);
    expect(JSON.parse(await detail.locator("pre.payload").innerText())).toEqual(
      JSON.parse(sent?.body ?? ""),
    );

    // The event with HTML in its payload: shown as the JSON text it is.
    const taskRow = page.locator("tr.delivery-row", { hasText: "task.created" });
    const other = page.locator(
      `tr.delivery-detail[data-delivery="${await taskRow.getAttribute("data-delivery")}"]`,
    );
    await other.getByText("Attempts, payload and headers").click();
    const payload = JSON.parse(await other.locator("pre.payload").innerText());
    expect(payload.diff.after.title).toBe(hostileTitle);

    const html = await page.content();
    expect(html).not.toContain(secret);
    expect(await page.locator("#injected-response, #injected-payload").count()).toBe(0);
    expect(await page.title()).not.toContain("pwned");
  });
});
