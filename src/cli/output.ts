/** Every command that creates or lists prints exactly one JSON value with --json. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/**
 * Prints one JSON array an item at a time, byte for byte as `printJson` would print the whole
 * array, so that a long listing never has to be held in memory.
 */
export function jsonArrayPrinter(): { item(value: unknown): void; end(): void } {
  let count = 0;
  return {
    item(value) {
      const indented = JSON.stringify(value, null, 2).replace(/\n/g, "\n  ");
      process.stdout.write(`${count === 0 ? "[\n" : ",\n"}  ${indented}`);
      count++;
    },
    end() {
      process.stdout.write(count === 0 ? "[]\n" : "\n]\n");
    },
  };
}
