import { type Command, Redis, type RedisOptions } from "ioredis";
import type { Tracer } from "../tracing/tracer.js";

/**
 * The ioredis client class the process connects with: with a tracer, each command sent while a
 * span is current gets a span of its own (its name only: keys and arguments stay out).
 */
export function redisClientClass(tracer: Tracer | undefined): typeof Redis {
  if (tracer === undefined) return Redis;
  return class TracedRedis extends Redis {
    override sendCommand(command: Command, stream?: Parameters<Redis["sendCommand"]>[1]): unknown {
      const operation = command.name.toUpperCase();
      const span = tracer.startChildSpan(operation, {
        kind: "client",
        attributes: {
          "db.system.name": "redis",
          "db.operation.name": operation,
          "server.address": this.options.host,
          "server.port": this.options.port,
        },
      });
      if (span !== undefined) {
        command.promise.then(
          () => span.end(),
          (error: unknown) => {
            span.fail(error);
            span.end();
          },
        );
      }
      return super.sendCommand(command, stream);
    }

    // BullMQ duplicates the connection it is given for its blocking commands.
    override duplicate(override?: Partial<RedisOptions>): Redis {
      return new TracedRedis({ ...this.options, ...override });
    }
  };
}
