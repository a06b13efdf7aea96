import path from "node:path";
import { fileURLToPath } from "node:url";
import { MessageChannel } from "node:worker_threads";
import type { Logger } from "pino";
import { Piscina } from "piscina";
import type { ConversionResult, ConversionTask } from "./markdown-worker.js";

export type MarkdownPoolOptions = {
  threads: number;
  /** A conversion running longer than this is stopped. */
  timeoutMs: number;
  /** The most a converted body may take, in bytes of rich-text JSON. */
  maxBytes: number;
};

export type PooledConversion = ConversionResult | { kind: "timed_out" } | { kind: "out_of_memory" };

// A thread's heap: ample for a body within RICH_TEXT_MAX_BYTES, and a bound on what a hostile
// one costs before it is stopped.
const WORKER_HEAP_MB = 256;

// The worker sits beside this module with the same extension: markdown-worker.ts from source,
// .js once compiled, and dist/markdown-worker.mjs beside the bundle (scripts/bundle.ts).
const here = fileURLToPath(import.meta.url);
const extension = path.extname(here);
const workerFile = path.join(path.dirname(here), `markdown-worker${extension}`);
// From source (tests, `npm run dev`) the worker thread needs tsx to load TypeScript.
const workerExecArgv = extension === ".ts" ? [...process.execArgv, "--import", "tsx"] : undefined;

/**
 * Converts markdown in worker threads, so that no input, however slow to parse, holds the event
 * loop. A conversion past the deadline is aborted: Piscina terminates its thread and starts
 * another, so a hostile body costs a thread for at most the deadline.
 */
export class MarkdownPool {
  private readonly piscina: Piscina<ConversionTask, ConversionResult>;

  constructor(
    private readonly options: MarkdownPoolOptions,
    logger: Pick<Logger, "warn">,
  ) {
    this.piscina = new Piscina({
      filename: workerFile,
      execArgv: workerExecArgv,
      // Threads start on the first conversion and stop after a minute unused. A lower priority
      // leaves the event loop's thread first in line for the CPU.
      minThreads: 0,
      maxThreads: options.threads,
      idleTimeout: 60_000,
      niceIncrement: 10,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    // A thread that dies holding no task (out of memory just as its aborted task was let go)
    // is reported here by Piscina; unheard, that event would end the process.
    this.piscina.on("error", (err) =>
      logger.warn({ err }, "markdown thread stopped between tasks"),
    );
  }

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  async convert(markdown: string): Promise<PooledConversion> {
    const controller = new AbortController();
    // The deadline runs from the moment a thread takes the task, so neither the wait for a free
    // thread nor a thread's start (loading the converter) counts against the input.
    const { port1: started, port2: reportStart } = new MessageChannel();
    let deadline: NodeJS.Timeout | undefined;
    started.once("message", () => {
      deadline = setTimeout(() => controller.abort(), this.options.timeoutMs);
    });
    try {
      return await this.piscina.run(
        { markdown, maxBytes: this.options.maxBytes, started: reportStart },
        { signal: controller.signal, transferList: [reportStart] },
      );
    } catch (error) {
      if (controller.signal.aborted) return { kind: "timed_out" };
      if ((error as { code?: unknown }).code === "ERR_WORKER_OUT_OF_MEMORY") {
        return { kind: "out_of_memory" };
      }
      throw error;
    } finally {
      clearTimeout(deadline);
      started.close();
    }
  }

  async close(): Promise<void> {
    await this.piscina.close({ force: true });
  }
}
