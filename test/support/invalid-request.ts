import { expect } from "vitest";
import type { ApiResponse } from "./api.js";

/**
 * The request was refused with 400 and the invalid_request envelope; `message` is the exact
 * text or an asymmetric matcher (`expect.stringMatching(...)`), any string by default.
 */
export function expectInvalidRequest(
  res: Pick<ApiResponse, "status" | "body">,
  message: unknown = expect.any(String),
): void {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ ok: false, error: "invalid_request", message });
}
