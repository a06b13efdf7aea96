/** A write's RETURNING gave no row: a fault in the code or the database, answered as a 500. */
export class NoRowReturned extends Error {
  constructor(write: string) {
    super(`${write} returned no row`);
    this.name = "NoRowReturned";
  }
}

/** Narrows the first row of a write's RETURNING, which the write always yields when it succeeds. */
export function assertRowReturned<T>(row: T | undefined, write: string): asserts row is T {
  if (row === undefined) throw new NoRowReturned(write);
}
