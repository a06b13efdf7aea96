export * from "./access.js";
export * from "./audit.js";
export * from "./idempotency.js";
export * from "./library.js";
export * from "./organizations.js";
export * from "./projects.js";
export * from "./sessions.js";
export * from "./webhooks.js";
