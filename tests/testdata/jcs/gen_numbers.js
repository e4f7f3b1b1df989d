// Generates numbers.json: IEEE 754 doubles (as 16 hex digits of their bits)
// with the text JSON.stringify gives them, which is ECMAScript
// Number::toString, the number form of RFC 8785 §3.2.2.3.
//
//   node tests/testdata/jcs/gen_numbers.js > tests/testdata/jcs/numbers.json
//
// Deterministic: a fixed-seed generator, so the output only changes when this
// script does. The C++ test reads the file; it never runs node.
'use strict';

const view = new DataView(new ArrayBuffer(8));
const bitsOf = (x) => { view.setFloat64(0, x); return view.getBigUint64(0); };
const fromBits = (b) => { view.setBigUint64(0, BigInt.asUintN(64, b)); return view.getFloat64(0); };
const hex = (b) => b.toString(16).padStart(16, '0');
const nextUp = (x) => fromBits(bitsOf(x) + 1n);    // for positive finite x
const nextDown = (x) => fromBits(bitsOf(x) - 1n);  // for positive x > 0

const values = [];
const add = (x) => { if (Number.isFinite(x)) values.push(x); };
const addWithNeighbours = (x) => { add(x); add(nextUp(x)); if (x > 0) add(nextDown(x)); };

// Zero, signs, and the obvious.
[0, -0, 1, -1, 0.5, 0.1, 0.2, 0.3, 0.1 + 0.2, 1 / 3, 2 / 3, -1 / 3, Math.PI, Math.E, 100, 1234.5678, -987.654321]
  .forEach(add);

// Powers of ten, with their neighbours: the exponent form switches at 1e21
// (n > 21) and at 1e-7 (n <= -6).
for (let e = -30; e <= 30; e++) addWithNeighbours(Number(`1e${e}`));
for (const m of [1.5, 2.5, 9.5, 9.999999999999999, 1.2345678901234567]) {
  for (const e of [-8, -7, -6, -5, 19, 20, 21, 22, 23]) add(Number(`${m}e${e}`));
}
[999999999999999900000, 999999999999999700000, 123456789012345680000, 0.000001, 0.0000012345,
  0.00000099, 1e-7, 1.5e-7].forEach(add);

// Extremes and subnormals.
add(Number.MAX_VALUE); add(-Number.MAX_VALUE); add(nextDown(Number.MAX_VALUE));
add(Number.MIN_VALUE); add(-Number.MIN_VALUE);
for (const b of [2n, 3n, 10n, 0x1234n, 0xfffffn, 0x000fffffffffffffn, 0x0008000000000000n]) add(fromBits(b));
add(fromBits(0x0010000000000000n));  // smallest normal
add(nextUp(fromBits(0x0010000000000000n)));
add(2.2250738585072014e-308); add(4.9406564584124654e-324);

// Integers around 2^53 and other powers of two.
for (let d = -4; d <= 4; d++) { add(2 ** 53 + 2 * d); add(-(2 ** 53 + 2 * d)); }
for (const p of [31, 32, 52, 53, 54, 63, 64, 68, 69, 70, 100, 1023]) { add(2 ** p); add(-(2 ** p)); }
add(2 ** -1074); add(2 ** -1022); add(2 ** -1);

// Random doubles from a fixed-seed xorshift64*: bit patterns spread over
// every exponent, and decimals of a few digits.
let state = 0x9e3779b97f4a7c15n;
const next64 = () => {
  state ^= state >> 12n; state ^= BigInt.asUintN(64, state << 25n); state ^= state >> 27n;
  return BigInt.asUintN(64, state * 0x2545f4914f6cdd1dn);
};
for (let i = 0; i < 200; i++) add(fromBits(next64()));
for (let i = 0; i < 100; i++) {
  const digits = Number(next64() % 100000000n);
  const exponent = Number(next64() % 60n) - 30;
  add(Number(`${digits}e${exponent}`));
}
for (let i = 0; i < 50; i++) add(Number(next64() >> 11n) / 2 ** 53);  // in [0, 1)

const seen = new Set();
const rows = [];
for (const x of values) {
  const bits = hex(bitsOf(x));
  if (seen.has(bits)) continue;
  seen.add(bits);
  rows.push(`  {"bits": "${bits}", "expected": ${JSON.stringify(JSON.stringify(x))}}`);
}
process.stdout.write(`[\n${rows.join(',\n')}\n]\n`);
