import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { authFailures } from "../../src/db/schema/index.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { importFixture, workspaceDocument } from "../support/fixtures.js";

const PASSWORD = "correct horse battery";
const OWNER = "owner@caps.example";
const OWNER_ADDRESS = "2001:db8:caf::10";
const TRAVELLER = "traveller@caps.example";

let t: TestApp;
let owner: InjectSession;

beforeAll(async () => {
  // The defaults: 2 sign-ins at once and 10 a minute on an account, from unknown places.
  t = await createTestApp();
  await importFixture(
    t.db,
    workspaceDocument("caps", {
      users: [
        { email: OWNER, name: "Olga Owner", role: "admin", password: PASSWORD },
        { email: TRAVELLER, name: "Tim Traveller", role: "admin", password: PASSWORD },
      ],
    }),
  );
  owner = new InjectSession(t.app, OWNER_ADDRESS);
  await owner.signIn(OWNER, PASSWORD);
});
afterAll(() => t.close());

/** Failed password checks on the account (only a check that ran and failed records one). */
const checkedAndWrong = () =>
  t.db.$count(authFailures, eq(authFailures.key, `sign-in:account:${OWNER}`));

async function strangers(count: number, firstHost: number) {
  const sessions = [];
  for (let i = 0; i < count; i += 1) {
    const session = new InjectSession(t.app, `198.51.100.${firstHost + i}`);
    sessions.push({ session, _csrf: await session.csrfTokenOf("/login") });
  }
  return sessions;
}

it("refuses most of 20 parallel guesses from 20 addresses without checking them", async () => {
  const guesses = await strangers(20, 1);
  const answers = await Promise.all(
    guesses.map(({ session, _csrf }, i) =>
      session.post("/login", { _csrf, email: OWNER, password: `wrong ${i}` }),
    ),
  );
  const statuses = answers.map((answer) => answer.statusCode);
  expect(statuses.every((status) => status === 401 || status === 429)).toBe(true);
  const checked = statuses.filter((status) => status === 401).length;
  expect(checked).toBeLessThanOrEqual(9);
  expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(11);
  expect(await checkedAndWrong()).toBe(checked);
  const refused = answers.find((answer) => answer.statusCode === 429);
  expect(refused?.body).toContain("Too many sign-in attempts on this account");
  expect(Number(refused?.headers["retry-after"])).toBeGreaterThan(0);
});

it("caps the minute's attempts, yet the owner's address and browser keep their way in", async () => {
  // An account of its own, so that its minute starts with this test.
  const [email, ownAddress] = [TRAVELLER, "2001:db8:cafe::10"];
  const own = new InjectSession(t.app, ownAddress);
  await own.signIn(email, PASSWORD);
  const answers = [];
  for (const { session, _csrf } of await strangers(11, 101)) {
    const answer = await session.post("/login", { _csrf, email, password: "wrong" });
    answers.push(answer.statusCode);
  }
  // 10 in the minute, the owner's own sign-in among them: 9 guesses checked, the rest refused.
  expect(answers).toEqual([...Array(9).fill(401), 429, 429]);

  // Someone new, even with the right password, waits for the minute…
  const newcomer = new InjectSession(t.app, "203.0.113.50");
  const right = { _csrf: await newcomer.csrfTokenOf("/login"), email, password: PASSWORD };
  expect((await newcomer.post("/login", right)).statusCode).toBe(429);
  // …and a known-device cookie that is not signed by the service changes nothing…
  const [, signed = ""] = [...own.cookies].find(([name]) => name === "svc_device") ?? [];
  newcomer.cookies.set("svc_device", `${decodeURIComponent(signed).split(".")[0]}.forged`);
  expect((await newcomer.post("/login", right)).statusCode).toBe(429);

  // …but the owner's address (any address of its /64) signs in at once…
  const sameNetwork = new InjectSession(t.app, "2001:db8:cafe::99");
  expect((await sameNetwork.signIn(email, PASSWORD)).headers.location).toBe("/admin");

  // …and so does the owner's browser from a new address, by its known-device cookie.
  const travelling = new InjectSession(t.app, "203.0.113.77");
  travelling.cookies.set("svc_device", signed);
  expect((await travelling.signIn(email, PASSWORD)).headers.location).toBe("/admin");
});
