import { describe, expect, it } from "vitest";
import { checkRedirectUri } from "../../src/oauth/addons.js";

describe("redirect URI registration rules", () => {
  it.each([
    "https://gantt.example/cb",
    "https://gantt.example/cb?tenant=1",
    "https://gantt.example:8443/oauth/callback",
    "http://localhost/cb",
    "http://localhost:5173/cb",
    "http://127.0.0.1:4000/cb",
  ])("accepts %s as written", (uri) => {
    expect(checkRedirectUri(uri)).toBe(uri);
  });

  it.each([
    ["plain http to another host", "http://gantt.example/cb", "must use https"],
    [
      "plain http to a look-alike of localhost",
      "http://localhost.evil.example/cb",
      "must use https",
    ],
    ["plain http to another loopback name", "http://[::1]:4000/cb", "must use https"],
    ["a relative URI", "/cb", "must be an absolute URL"],
    ["a fragment", "https://gantt.example/cb#frag", "must not contain a fragment"],
    ["an empty fragment", "https://gantt.example/cb#", "must not contain a fragment"],
    ["credentials", "https://user:pw@gantt.example/cb", "must not contain credentials"],
    ["another scheme", "ftp://gantt.example/cb", "must use https"],
    ["a custom scheme", "com.example.app:/cb", "must use https"],
    ["javascript", "javascript:alert(1)", "must use https"],
  ])("refuses %s", (_name, uri, reason) => {
    expect(() => checkRedirectUri(uri)).toThrow(reason);
  });
});
