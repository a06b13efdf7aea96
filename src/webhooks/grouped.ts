const MAX_GROUP = 500;

type Waiting<T, R> = { item: T; resolve: (result: R) => void; reject: (error: unknown) => void };

/**
 * Group commit: an item goes in the next turn of the event loop when no run is in flight, else
 * with the others that arrive meanwhile, in the next run (never two of one key). `run` answers one
 * result per item, in order; if it fails, every item of its run fails.
 *
 * The turn lets the callbacks already due join the first run: PGlite runs a statement on this
 * thread, so nothing else arrives while it is in flight, and without the turn every item went
 * alone (bench/RESULTS.md, the embedded pipeline).
 */
export function grouped<T, R>(
  run: (items: T[]) => Promise<R[]>,
  keyOf: (item: T) => string,
): (item: T) => Promise<R> {
  const waiting: Waiting<T, R>[] = [];
  let running = false;

  const nextGroup = () => {
    const keys = new Set<string>();
    let size = 0;
    for (const next of waiting) {
      const key = keyOf(next.item);
      if (size === MAX_GROUP || keys.has(key)) break;
      keys.add(key);
      size++;
    }
    return waiting.splice(0, size);
  };

  const drain = async () => {
    try {
      for (let group = nextGroup(); group.length > 0; group = nextGroup()) {
        try {
          const results = await run(group.map((next) => next.item));
          for (const [index, next] of group.entries()) next.resolve(results[index] as R);
        } catch (error) {
          for (const next of group) next.reject(error);
        }
      }
    } finally {
      running = false;
    }
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (running) return;
      running = true;
      setImmediate(drain);
    });
}
