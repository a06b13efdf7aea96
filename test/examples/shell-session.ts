import { WatchedProcess } from "./watched-process.js";

/** Single-quoted for the shell, as a reader pastes a value. */
function shellQuoted(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * One bash, fed the docs' blocks one after another as a reader pastes them into one
 * terminal: variables carry from block to block, and background jobs keep running. Strict
 * (`set -euo pipefail`), so a failing command or an unset variable ends the session and fails
 * the test.
 */
export class ShellSession {
  private blocksRun = 0;

  private constructor(private readonly shell: WatchedProcess) {}

  static start(cwd: string, env: Record<string, string>): ShellSession {
    const shell = WatchedProcess.start("the shell", "bash", ["--noprofile", "--norc"], {
      cwd,
      env,
    });
    shell.write("set -euo pipefail\n");
    return new ShellSession(shell);
  }

  /** What the text asks the reader to set by hand (a value copied from a page, say). */
  set(variables: Record<string, string>): void {
    for (const [name, value] of Object.entries(variables)) {
      this.shell.write(`${name}=${shellQuoted(value)}\n`);
    }
  }

  /**
   * Runs a block as written and returns what it printed. A block may start several `svc`
   * processes on the embedded database, each some seconds on a loaded two-core machine.
   */
  async run(block: string, timeoutMs = 90_000): Promise<string> {
    this.blocksRun += 1;
    const marker = `__block_${this.blocksRun}_done__`;
    const from = this.shell.stdout.length;
    // The block's commands read /dev/null, not the rest of the script from stdin.
    this.shell.write(`{\n${block}\n} </dev/null\nprintf '\\n%s\\n' '${marker}'\n`);
    const done = await this.shell.waitFor(new RegExp(`\\n${marker}\\n`), { from, timeoutMs });
    return this.shell.stdout.slice(from, done.index);
  }

  /** Waits for output of a background job the blocks started. */
  waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    return this.shell.waitFor(pattern, { timeoutMs });
  }

  transcript(): string {
    return this.shell.transcript();
  }

  close(): Promise<unknown> {
    return this.shell.stop(2_000);
  }
}
