import { describe, expect, it } from "vitest";
import { safeReturnPath } from "../../src/sessions/members.js";

describe("the return address after sign-in", () => {
  it.each([
    "//evil.example",
    "/\\evil.example",
    "/.//evil.example",
    "/..//evil.example",
    "/%2e%2e//evil.example",
    "/a/..//evil.example/path",
    "https://evil.example/",
    "evil.example",
    "/ok\nSet-Cookie: x",
  ])("refuses %j, which would leave the site", (value) => {
    expect(safeReturnPath(value)).toBeNull();
  });

  it("keeps a path on this site with its query", () => {
    expect(safeReturnPath("/oauth/authorize?client_id=svcc_x&state=%C3%A9")).toBe(
      "/oauth/authorize?client_id=svcc_x&state=%C3%A9",
    );
    expect(safeReturnPath(`/oauth/authorize?state=${"%C3%A9".repeat(1000)}`)).not.toBeNull();
  });
});
