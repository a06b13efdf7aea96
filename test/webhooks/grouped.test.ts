import { describe, expect, it } from "vitest";
import { grouped } from "../../src/webhooks/grouped.js";

/** A run that finishes without yielding to the event loop, as a statement on PGlite does. */
function recordingRuns() {
  const runs: number[][] = [];
  const run = grouped(
    (items: number[]) => {
      runs.push(items);
      return Promise.resolve(items.map((item) => item * 10));
    },
    (item) => String(item),
  );
  return { runs, run };
}

describe("grouped", () => {
  it("lets items that arrive in one turn of the event loop share a run that never yields", async () => {
    const { runs, run } = recordingRuns();
    const results = await new Promise<number[]>((resolve) => {
      const answers: Promise<number>[] = [];
      // Three callbacks due together, as HTTP answers that arrived during a synchronous statement.
      for (const item of [1, 2, 3]) setImmediate(() => answers.push(run(item)));
      setImmediate(() => void Promise.all(answers).then(resolve));
    });
    expect(results).toEqual([10, 20, 30]);
    expect(runs).toEqual([[1, 2, 3]]);
  });

  it("never puts two items of one key in a run, and runs the rest after", async () => {
    const { runs, run } = recordingRuns();
    expect(await Promise.all([run(1), run(1), run(2)])).toEqual([10, 10, 20]);
    expect(runs).toEqual([[1], [1, 2]]);
  });
});
