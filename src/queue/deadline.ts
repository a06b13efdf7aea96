/** What `withinDeadline` answers for a promise that did not settle in time. */
export const MISSED = Symbol("missed its deadline");

/**
 * `answer`, or MISSED once `deadlineMs` have passed. The deadline is declared only after the
 * event loop has read what arrived meanwhile (setImmediate runs after I/O), so a loop that lagged
 * on a busy machine does not blame a dependency whose answer is already there.
 */
export async function withinDeadline<T>(
  answer: Promise<T>,
  deadlineMs: number,
): Promise<T | typeof MISSED> {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const missed = new Promise<typeof MISSED>((resolve) => {
    timer = setTimeout(() => {
      immediate = setImmediate(() => resolve(MISSED));
    }, deadlineMs);
  });
  try {
    return await Promise.race([answer, missed]);
  } finally {
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
  }
}
