import type { Reporter, TestModule, Vitest } from "vitest/node";

const SHOWN = 10;

/** Seconds a file took: importing it and its hooks and tests, as Vitest counts them. */
function secondsOf(testModule: TestModule): number {
  const { prepareDuration, collectDuration, setupDuration, duration } = testModule.diagnostic();
  return (prepareDuration + collectDuration + setupDuration + duration) / 1000;
}

/** Prints the slowest test files after every run, so a file that grows slow is noticed. */
export default class SlowestFilesReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const slowest = testModules
      .map((testModule) => ({ file: testModule.relativeModuleId, seconds: secondsOf(testModule) }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, SHOWN);
    if (slowest.length === 0) return;
    const lines = slowest.map(
      ({ file, seconds }) => `  ${seconds.toFixed(1).padStart(6)} s  ${file}`,
    );
    this.vitest?.logger.log(`\nSlowest test files:\n${lines.join("\n")}`);
  }
}
