import { createRequire } from "node:module";
import { type DestinationStream, pino } from "pino";

// Lines are gathered up to this many bytes and written together, synchronously: a busy process
// makes one write per few lines instead of one per line, and a slow reader of the log slows the
// process down rather than filling its memory with lines waiting to be written.
const BATCH_BYTES = 4096;
// A quiet process still writes what it gathered within this long.
const FLUSH_INTERVAL_MS = 500;

function jsonLines(destination: 1 | 2): DestinationStream {
  const stream = pino.destination({ dest: destination, sync: true, minLength: BATCH_BYTES });
  setInterval(() => stream.flush(), FLUSH_INTERVAL_MS).unref();
  // Whatever way the process ends (but SIGKILL), the gathered lines are written first.
  process.once("exit", () => stream.flushSync());
  return stream;
}

/** Coloured lines for a person at a terminal; loaded only then, so production never pays for it. */
function readableLines(destination: 1 | 2): DestinationStream {
  const require = createRequire(import.meta.url);
  const pretty: typeof import("pino-pretty") = require("pino-pretty");
  return pretty({ destination, sync: true, colorize: true, translateTime: "SYS:HH:MM:ss.l" });
}

/**
 * Credentials never reach the log, whichever object carries them. One-shot CLI commands log to
 * stderr (`destination` 2) so their stdout stays the one JSON value `--json` promises. `readable`
 * lines are for a terminal; anything else gets one JSON object per line.
 */
export function createLogger(
  level: string,
  destination: 1 | 2 = 1,
  options: { readable?: boolean } = {},
) {
  const stream = options.readable ? readableLines(destination) : jsonLines(destination);
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
