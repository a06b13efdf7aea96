import { pino } from "pino";

// Lines are gathered up to this many bytes and written together, synchronously: a busy process
// makes one write per few lines instead of one per line, and a slow reader of the log slows the
// process down rather than filling its memory with lines waiting to be written.
const BATCH_BYTES = 4096;
// A quiet process still writes what it gathered within this long.
const FLUSH_INTERVAL_MS = 500;

/**
 * Credentials never reach the log, whichever object carries them. One-shot CLI commands log to
 * stderr (`destination` 2) so their stdout stays the one JSON value `--json` promises.
 */
export function createLogger(level: string, destination: 1 | 2 = 1) {
  const stream = pino.destination({ dest: destination, sync: true, minLength: BATCH_BYTES });
  setInterval(() => stream.flush(), FLUSH_INTERVAL_MS).unref();
  // Whatever way the process ends (but SIGKILL), the gathered lines are written first.
  process.once("exit", () => stream.flushSync());
  return pino(
    {
      level,
      redact: {
        paths: [
          "req.headers.authorization",
          "req.headers.cookie",
          "*.secret",
          "*.token",
          "*.password",
          "*.clientSecret",
        ],
        censor: "[redacted]",
      },
    },
    stream,
  );
}
