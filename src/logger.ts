import { pino } from "pino";

/** Credentials never reach the log, whichever object carries them. */
export function createLogger(level: string) {
  return pino({
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
  });
}
