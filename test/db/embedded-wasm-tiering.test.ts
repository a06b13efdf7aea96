import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BASELINE_WASM_ONLY } from "../../src/db/embedded.js";

// The embedded mode sets its V8 flags at run time, before PGlite loads. Whether a hot WebAssembly
// function was optimised is only visible to V8's test natives, so a child process of this very
// Node binary sets the flags the same way, runs one hot, and asks V8 which tier runs it.
const dir = mkdtempSync(path.join(tmpdir(), "wasm-tiering-"));
const probe = path.join(dir, "probe.mjs");
writeFileSync(
  probe,
  `import { setFlagsFromString } from "node:v8";
setFlagsFromString(process.env.FLAGS);
// (func (export "f") (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,6,1,96,1,127,1,127,3,2,1,0,7,5,1,1,102,0,0,10,9,1,7,0,32,0,65,1,106,11]);
const { instance } = await WebAssembly.instantiate(bytes);
const f = instance.exports.f;
let x = 0;
// Hot enough to tier up, with turns between the rounds for the background compiler.
for (let round = 0; round < 50; round++) {
  for (let i = 0; i < 100000; i++) x = f(x);
  await new Promise((resolve) => setTimeout(resolve, 5));
}
console.log(JSON.stringify({ liftoff: %IsLiftoffFunction(f), turbofan: %IsTurboFanFunction(f) }));
`,
);

function tierOfHotFunction(flags: string): { liftoff: boolean; turbofan: boolean } {
  const run = spawnSync(process.execPath, ["--allow-natives-syntax", probe], {
    env: { PATH: process.env.PATH, FLAGS: flags },
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe(`the embedded mode's WebAssembly flags on Node ${process.version}`, () => {
  it("keep a hot function on the baseline compiler", () => {
    expect(tierOfHotFunction(BASELINE_WASM_ONLY)).toEqual({ liftoff: true, turbofan: false });
  });

  it("are what keeps it there: without them the same function is optimised", () => {
    expect(tierOfHotFunction("--no-liftoff-only")).toEqual({ liftoff: false, turbofan: true });
  });
});
