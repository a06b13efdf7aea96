import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

/**
 * A child process in a process group of its own, whose output a test waits on. Stopping it
 * signals the whole group, so what it started (npm's shell, tsx's node, a shell's background
 * jobs) goes too.
 */
export class WatchedProcess {
  private out = "";
  private err = "";
  private exitCode: number | null | undefined;
  private readonly exited: Promise<void>;
  private readonly onChange = new Set<() => void>();

  private constructor(
    readonly name: string,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      this.out += chunk;
      this.changed();
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.err += chunk;
      this.changed();
    });
    this.exited = new Promise((resolve) => {
      child.on("close", (code) => {
        this.exitCode = code;
        resolve();
        this.changed();
      });
    });
  }

  static start(
    name: string,
    command: string,
    args: string[],
    options: { cwd: string; env: Record<string, string> },
  ): WatchedProcess {
    const child = spawn(command, args, { ...options, detached: true });
    return new WatchedProcess(name, child);
  }

  get stdout(): string {
    return this.out;
  }

  get stderr(): string {
    return this.err;
  }

  write(text: string): void {
    this.child.stdin.write(text);
  }

  /** Waits until stdout, from offset `from` on, matches; the match's index counts from 0. */
  waitFor(
    pattern: RegExp,
    { from = 0, timeoutMs = 30_000 }: { from?: number; timeoutMs?: number } = {},
  ): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        this.onChange.delete(check);
      };
      const check = () => {
        const match = pattern.exec(this.out.slice(from));
        if (match !== null) {
          finish();
          match.index += from;
          resolve(match);
        } else if (this.exitCode !== undefined) {
          finish();
          reject(
            new Error(
              `${this.name} exited (${this.exitCode}) before printing ${pattern}\n${this.transcript()}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new Error(
            `${this.name} did not print ${pattern} within ${timeoutMs} ms\n${this.transcript()}`,
          ),
        );
      }, timeoutMs);
      this.onChange.add(check);
      check();
    });
  }

  transcript(): string {
    return `--- ${this.name}, stdout:\n${this.out.slice(-6000)}\n--- stderr:\n${this.err.slice(-6000)}`;
  }

  /** SIGTERM to the group, SIGKILL to whatever is left after `graceMs`; resolves with the exit code. */
  async stop(graceMs = 10_000): Promise<number | null | undefined> {
    if (this.exitCode === undefined) {
      this.signalGroup("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.exited,
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.signalGroup("SIGKILL");
    await this.exited;
    return this.exitCode;
  }

  private signalGroup(signal: NodeJS.Signals): void {
    try {
      // A negative pid addresses the process group that `detached` made this child lead.
      process.kill(-(this.child.pid as number), signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  }

  private changed(): void {
    for (const check of [...this.onChange]) check();
  }
}
