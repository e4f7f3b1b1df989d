// Runs parity cases through the wasm core in Node (tests/wasm_parity_test.cc).
// node wasm_parity.mjs MODULE CASES: CASES is a JSON array of {fn, input}
// (fn a method of browser/core/core.mjs, input JSON text); prints a JSON array
// of the answers' texts, in order. A trap answers "internal" and re-instantiates.
import { readFileSync } from 'node:fs';
import { instantiate } from '../browser/core/core.mjs';

const [modulePath, casesPath] = process.argv.slice(2);
const core = await instantiate(readFileSync(modulePath));
const cases = JSON.parse(readFileSync(casesPath, 'utf8'));
const answers = [];
for (const c of cases) {
  answers.push(core.raw[c.fn](c.input));
  await core.ready();
}
process.stdout.write(JSON.stringify({ instances: core.instances(), answers }));
