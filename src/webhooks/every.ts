/** A task run on an interval, and at once when woken. */
type Loop = { wake(): void; stop(): Promise<void> };

/**
 * Runs `task` every `intervalMs`, and at once when woken. A wake while the task runs makes it
 * run again right after, so nothing committed during a run waits for the next interval.
 */
export function every(
  intervalMs: number,
  task: () => Promise<unknown>,
  onError: (err: unknown) => void,
): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let wokenWhileRunning = false;
  const tick = () => {
    clearTimeout(timer);
    wokenWhileRunning = false;
    running = task()
      .catch(onError)
      .finally(() => {
        running = undefined;
        if (stopped) return;
        if (wokenWhileRunning) tick();
        else timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    wake() {
      if (stopped) return;
      if (running === undefined) tick();
      else wokenWhileRunning = true;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
