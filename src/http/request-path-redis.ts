import type { Redis } from "ioredis";
import { MISSED, withinDeadline } from "../queue/deadline.js";

/** Redis did not answer in time, or an earlier command is still unanswered. */
class RedisStalled extends Error {
  override name = "RedisStalled";
}

/**
 * The Redis commands a request waits for (the shared rate limit, readiness), each within a
 * deadline. A command past its deadline is left to finish; until Redis answers it no other is
 * sent, so a stalled Redis neither holds requests nor piles up commands to run when it resumes.
 */
export class RequestPathRedis {
  private unanswered: Promise<void> | undefined;

  constructor(private readonly redis: Redis) {}

  /** A Lua script as a command of its own (ioredis `defineCommand`); defining sends nothing. */
  defineCommand(name: string, definition: { lua: string }): void {
    this.redis.defineCommand(name, definition);
  }

  async run<T>(deadlineMs: number, command: (redis: Redis) => Promise<T>): Promise<T> {
    if (this.unanswered !== undefined) {
      throw new RedisStalled("Redis has not yet answered a command past its deadline");
    }
    const answer = command(this.redis);
    const outcome = await withinDeadline(answer, deadlineMs);
    if (outcome !== MISSED) return outcome;
    if (this.unanswered === undefined) {
      // Whether it answers or the connection drops, Redis may be asked again afterwards.
      const answered = () => {
        this.unanswered = undefined;
      };
      this.unanswered = answer.then(answered, answered);
    }
    throw new RedisStalled(`Redis did not answer within ${deadlineMs} ms`);
  }
}
