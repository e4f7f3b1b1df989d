// The wasm core in Node (docs/browser.md, "The WebAssembly core"):
//   node bench/wasm_core.mjs [build-wasm/taskyon_core.wasm] [build/bench/taskyon_bench]
// prints the module's size (raw and gzip), compile and instantiate times
// (median of 20), and decisions/s of taskyon_decide_fetch and
// taskyon_manifest through the loader; given the native benchmark binary, it
// runs AbiDecideFetch/AbiManifest (bench/bench_abi.cc, the same inputs) in the
// same run and reports wasm as a ratio of native.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { instantiate } from '../browser/core/core.mjs';

const here = new URL('..', import.meta.url).pathname;
const modulePath = process.argv[2] ?? `${here}build-wasm/taskyon_core.wasm`;
const nativeBench = process.argv[3];
const bytes = readFileSync(modulePath);

const median = (/** @type {number[]} */ xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const compileMs = [], instMs = [];
for (let i = 0; i < 20; ++i) {
  const t0 = performance.now();
  const module = await WebAssembly.compile(bytes);
  const t1 = performance.now();
  await instantiate(module);
  compileMs.push(t1 - t0);
  instMs.push(performance.now() - t1);
}

const inputs = [
  '{"url":"https://93.184.215.14/"}', '{"url":"https://127.0.0.1/admin"}',
  '{"url":"https://[2606:4700:4700::1111]/dns-query"}', '{"url":"https://169.254.169.254/latest/meta-data/"}',
  '{"url":"https://0x7f.1/"}', '{"url":"https://[::ffff:127.0.0.1]/"}', '{"url":"https://8.8.8.8:8443/path?q=1"}',
  '{"url":"https://10.0.0.1/"}',
];
const manifest = readFileSync(`${here}examples/tools/add.json`, 'utf8');
const core = await instantiate(bytes);
function rate(/** @type {() => void} */ fn) {
  for (let i = 0; i < 2000; ++i) fn();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 1000) {
    for (let i = 0; i < 100; ++i) fn();
    n += 100;
  }
  return n / ((performance.now() - t0) / 1000);
}
let k = 0;
const wasmDecide = rate(() => core.raw.decideFetch(inputs[k++ % inputs.length]));
const wasmManifest = rate(() => core.raw.manifest(manifest));

const out = {
  module: modulePath,
  bytes: bytes.length,
  gzipBytes: gzipSync(bytes, { level: 9 }).length,
  compileMsMedian: +median(compileMs).toFixed(2),
  instantiateMsMedian: +median(instMs).toFixed(2),
  wasmDecisionsPerSec: Math.round(wasmDecide),
  wasmManifestsPerSec: Math.round(wasmManifest),
};
if (nativeBench) {
  const report = JSON.parse(execFileSync(nativeBench, ['--benchmark_filter=^Abi', '--benchmark_format=json'], { encoding: 'utf8' }));
  /** @type {Record<string, number>} */
  const perSec = {};
  for (const b of report.benchmarks) perSec[b.name] = b.items_per_second;
  out.nativeDecisionsPerSec = Math.round(perSec.AbiDecideFetch);
  out.nativeManifestsPerSec = Math.round(perSec.AbiManifest);
  out.wasmToNativeDecisions = +(wasmDecide / perSec.AbiDecideFetch).toFixed(3);
  out.wasmToNativeManifests = +(wasmManifest / perSec.AbiManifest).toFixed(3);
}
console.log(JSON.stringify(out, null, 2));
