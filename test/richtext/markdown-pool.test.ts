import type { EventEmitter } from "node:events";
import { afterAll, describe, expect, it } from "vitest";
import { MarkdownPool } from "../../src/richtext/markdown-pool.js";

const warnings: { err: unknown; message: string }[] = [];
const pool = new MarkdownPool({ threads: 1, timeoutMs: 10_000, maxBytes: 1_000_000 }, {
  warn: (err: unknown, message: string) => warnings.push({ err, message }),
} as never);
afterAll(() => pool.close());

describe("the markdown pool", () => {
  it("outlives a thread that dies holding no task, logging it, and converts the next body", async () => {
    expect((await pool.convert("# One")).kind).toBe("converted");
    // Piscina reports such a death (a thread out of memory just as its aborted task was let go,
    // which ended a CI run once) as an "error" event on the pool; the race itself cannot be
    // timed in a test, so the event is raised here as Piscina raises it.
    const piscina = (pool as unknown as { piscina: EventEmitter }).piscina;
    const death = Object.assign(new Error("Worker terminated due to reaching memory limit"), {
      code: "ERR_WORKER_OUT_OF_MEMORY",
    });
    expect(() => piscina.emit("error", death)).not.toThrow();
    expect(warnings).toEqual([{ err: { err: death }, message: expect.stringMatching(/thread/) }]);
    expect((await pool.convert("# Two")).kind).toBe("converted");
  });
});
