import { pino } from "pino";

/**
 * Credentials never reach the log, whichever object carries them. One-shot CLI commands log to
 * stderr (`destination` 2) so their stdout stays the one JSON value `--json` promises.
 */
export function createLogger(level: string, destination: 1 | 2 = 1) {
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
    pino.destination(destination),
  );
}
