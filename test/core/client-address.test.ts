import { expect, it } from "vitest";
import { clientAddress } from "../../src/core/client-address.js";

it("keeps an IPv4 address, and unwraps an IPv4-mapped one", () => {
  expect(clientAddress("203.0.113.7")).toBe("203.0.113.7");
  expect(clientAddress("::ffff:203.0.113.7")).toBe("203.0.113.7");
});

it("counts an IPv6 address by its /64, however it is spelled", () => {
  const key = clientAddress("2001:db8:1:2::1");
  expect(key).toBe("2001:db8:1:2::/64");
  expect(clientAddress("2001:0DB8:0001:0002:ffff:eeee:dddd:cccc")).toBe(key);
  expect(clientAddress("2001:db8:1:3::1")).not.toBe(key);
});

it("reads other spellings of an IPv4 address as the address they name", () => {
  expect(clientAddress("203.000.113.7")).toBe("203.0.113.7");
  expect(clientAddress("203.0.29447")).toBe("203.0.115.7");
});
