import { describe, expect, it } from "vitest";
import { assertRowReturned, NoRowReturned } from "../../src/db/returned-row.js";

describe("assertRowReturned", () => {
  it("passes a returned row through", () => {
    const row: { id: string } | undefined = { id: "a" };
    assertRowReturned(row, "page insert");
    expect(row.id).toBe("a");
  });

  it("names the write when RETURNING gave nothing", () => {
    expect(() => assertRowReturned(undefined, "page insert")).toThrow(NoRowReturned);
    expect(() => assertRowReturned(undefined, "page insert")).toThrow(
      "page insert returned no row",
    );
  });
});
