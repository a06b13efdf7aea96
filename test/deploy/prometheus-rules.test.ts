import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/cli.js";

/**
 * deploy/prometheus/ as an operator loads it: promtool (Debian's `prometheus` package, which
 * .ci/run installs) accepts the scrape config and the rules and passes the rules' unit tests,
 * every alert has a firing and a quiet case there, and its runbook link leads to its section of
 * docs/operating.md.
 */

const DEPLOY = path.join(ROOT, "deploy/prometheus");

type Run = { code: number; output: string };

async function promtool(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)("promtool", args, { cwd: DEPLOY });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code?: number | string; stdout?: string; stderr?: string };
    if (failure.code === "ENOENT") {
      throw new Error(
        "promtool is not installed: `apt-get install -y prometheus` (Debian's package holds it)",
      );
    }
    return { code: Number(failure.code), output: `${failure.stdout}${failure.stderr}` };
  }
}

const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

/** The alerts of alerts.yml, in order: each one's name and the text of its rule. */
function alerts(): { name: string; rule: string }[] {
  return read("deploy/prometheus/alerts.yml")
    .split(/^\s*- alert: /m)
    .slice(1)
    .map((rule) => ({ name: rule.split("\n")[0]?.trim() ?? "", rule }));
}

/** Each alert of alerts.test.yml's cases, with whether that case expects it to fire. */
function alertCases(): { alertname: string; fires: boolean }[] {
  return read("deploy/prometheus/alerts.test.yml")
    .split(/^\s*- eval_time: /m)
    .slice(1)
    .map((block) => ({
      alertname: /^\s*alertname: (\S+)$/m.exec(block)?.[1] ?? "",
      fires: !/^\s*exp_alerts: \[\]$/m.test(block),
    }));
}

describe("deploy/prometheus", () => {
  it("promtool accepts the rules, lint included", async () => {
    const run = await promtool("check", "rules", "--lint=all", "--lint-fatal", "alerts.yml");
    expect(run, run.output).toMatchObject({ code: 0 });
  });

  it("the rules pass their unit tests", async () => {
    const run = await promtool("test", "rules", "alerts.test.yml");
    expect(run, run.output).toMatchObject({ code: 0 });
  });

  it("promtool accepts the scrape config and the rule file it loads", async () => {
    const run = await promtool("check", "config", "--lint=all", "--lint-fatal", "prometheus.yml");
    expect(run, run.output).toMatchObject({ code: 0 });
    expect(run.output).toContain("SUCCESS: 1 rule files found");
  });

  it("tests every alert both firing and quiet", () => {
    const cases = alertCases();
    expect(alerts().length).toBeGreaterThanOrEqual(8);
    for (const { name } of alerts()) {
      const own = cases.filter((c) => c.alertname === name);
      expect(
        own.some((c) => c.fires),
        `${name}: a case where it fires`,
      ).toBe(true);
      expect(
        own.some((c) => !c.fires),
        `${name}: a case where it stays quiet`,
      ).toBe(true);
    }
  });

  it("gives every alert a severity and a link to its own section of docs/operating.md", () => {
    const headings = read("docs/operating.md").split("\n");
    for (const { name, rule } of alerts()) {
      expect(rule, name).toMatch(/^\s*severity: (warning|critical)$/m);
      expect(rule, name).toContain(`runbook_url: "docs/operating.md#${name.toLowerCase()}"`);
      expect(headings, name).toContain(`### ${name}`);
    }
  });
});
