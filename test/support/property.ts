import fc from "fast-check";
import { expect } from "vitest";
import type { ApiResponse } from "./api.js";
import { expectInvalidRequest } from "./invalid-request.js";

/**
 * Strings a client might send, including text the database cannot store (NUL, a lone high
 * surrogate), `more` kinds of string, then `samples`: the boundaries and markup of the fields
 * under test.
 */
export function clientText(
  samples: readonly string[],
  more: readonly fc.Arbitrary<string>[] = [],
): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string(),
    fc.string({ unit: "binary" }),
    fc.string({ maxLength: 3 }).map((s) => `${s}\u0000`),
    fc.string({ maxLength: 3 }).map((s) => `\ud800${s}`),
    ...more,
    fc.constantFrom(...samples),
  );
}

/** Any JSON value a client might send where a string is expected. */
export function clientValue(text: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  return fc.oneof(text, fc.anything(), fc.constant(null));
}

/** Bodies a client might send: any value, any object, or objects `shaped` like the route's. */
export function clientBodies(...shaped: fc.Arbitrary<unknown>[]): fc.Arbitrary<unknown> {
  return fc.oneof(fc.anything(), fc.object(), ...shaped);
}

/** A write answers 200, or 400 with the failure envelope: never a 5xx. `seen` collects statuses. */
function expectRefusedOrDone(res: Pick<ApiResponse, "status" | "body">, seen?: Set<number>): void {
  seen?.add(res.status);
  expect([200, 400]).toContain(res.status);
  if (res.status === 400) expectInvalidRequest(res);
}

/**
 * Sends every generated body: each answer is 200 or a 400 failure envelope (see
 * `expectRefusedOrDone`), a 400 leaves `state` exactly as it was, and `accepted` checks what
 * a 200 changed.
 */
export async function assertRefusalsChangeNothing<Body, State>(options: {
  bodies: fc.Arbitrary<Body>;
  send: (body: Body) => Promise<ApiResponse>;
  state: () => Promise<State>;
  accepted: (before: State, after: State) => void;
  numRuns: number;
  seen?: Set<number>;
}): Promise<void> {
  await fc.assert(
    fc.asyncProperty(options.bodies, async (body) => {
      const before = await options.state();
      const res = await options.send(body);
      expectRefusedOrDone(res, options.seen);
      const after = await options.state();
      if (res.status === 400) expect(after).toEqual(before);
      else options.accepted(before, after);
    }),
    { numRuns: options.numRuns },
  );
}
