// The browser Python sandbox's host side (issue 15, B6/B7): Pyodide's core
// files and the shipped wheels (browser/wheels/) fetched by the host page, each
// checked against the SHA-256 id pinned in pyodide-manifest.js (generated from
// the npm package and the wheels by scripts/pyodide-manifest.mjs) before any
// sandbox sees a byte, and kept in
// memory (per page, keyed by id) so a new sandbox never downloads again. The
// sandbox itself is an ordinary sandbox (sandbox.js) with a module worker from
// a data: URL, the same CSP plus 'wasm-unsafe-eval' (Pyodide is WebAssembly;
// without it loadPyodide never settles) and a longer start timeout.

import { PYODIDE_MANIFEST } from './pyodide-manifest.js';
import { fetchAsset } from './sandbox.js';

/** Milliseconds a Python sandbox has to boot (Pyodide takes ~5-6 s on an idle 2-core machine, 30 s and more when it is loaded). */
export const PYTHON_START_TIMEOUT_MS = 60000;

/** The Python sandbox CSP: the JS sandbox's, plus 'wasm-unsafe-eval' and data: module workers. Still no connect-src, no eval.
 * @param {string} bootstrapHash @param {boolean} [noWasmEval] test mode only: without 'wasm-unsafe-eval' (the boot never settles) */
export function pythonCsp(bootstrapHash, noWasmEval = false) {
  return `default-src 'none'; script-src '${bootstrapHash}' blob:${noWasmEval ? '' : " 'wasm-unsafe-eval'"}; worker-src blob: data:; connect-src 'none'; base-uri 'none'; form-action 'none'`;
}

/** An asset refused by its id: `code` 'asset_integrity', the message names the file. */
export class AssetError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

// Verified bytes of this page, by SHA-256 id: shared by every SandboxHost.
const verified = new Map();  // sha256 hex -> ArrayBuffer

/** The host origin's Cache API store of verified files, keyed by id (a later page does not download again). */
export const PYODIDE_CACHE = 'taskyon-pyodide-v1';
const cacheKey = (sha256) => `https://taskyon.invalid/pyodide/sha256/${sha256}`;

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const matches = async (bytes, want) => bytes.byteLength === want.size && hex(await crypto.subtle.digest('SHA-256', bytes)) === want.sha256;

// The Cache API exists in secure contexts only; without it (or on any error) the network is used.
async function fromCache(want) {
  try {
    if (!globalThis.caches) return null;
    const r = await (await caches.open(PYODIDE_CACHE)).match(cacheKey(want.sha256));
    if (!r) return null;
    const bytes = await r.arrayBuffer();
    if (await matches(bytes, want)) return bytes;  // checked again: the cache is storage, not a proof
    await (await caches.open(PYODIDE_CACHE)).delete(cacheKey(want.sha256));
  } catch { /* no cache: fetch */ }
  return null;
}

async function toCache(want, bytes) {
  try {
    if (globalThis.caches) await (await caches.open(PYODIDE_CACHE)).put(cacheKey(want.sha256), new Response(bytes.slice(0)));
  } catch { /* quota or no cache: memory only */ }
}

/**
 * One core file or wheel, verified: from memory, else the cache, else fetched; by its id.
 * @param {URL} base @param {string} name @param {{sha256: string, size: number}} want
 * @param {boolean} useCache @param {string} what how an error names the file
 * @returns {Promise<ArrayBuffer>}
 */
async function verifiedFile(base, name, want, useCache, what) {
  const have = verified.get(want.sha256) || (useCache ? await fromCache(want) : null);
  if (have) { verified.set(want.sha256, have); return have; }
  let bytes;
  try {
    bytes = await (await fetchAsset(base, name)).arrayBuffer();
  } catch (e) {
    throw new AssetError('asset_unavailable', `${what} ${name} could not be fetched: ${e && e.message}`);
  }
  if (!(await matches(bytes, want))) {
    const got = hex(await crypto.subtle.digest('SHA-256', bytes));
    throw new AssetError('asset_integrity', `${what} ${name} does not match its id: sha256 ${got} (${bytes.byteLength} bytes), expected ${want.sha256} (${want.size} bytes); the Python sandbox does not start`);
  }
  verified.set(want.sha256, bytes);
  if (useCache) await toCache(want, bytes);
  return bytes;
}

/**
 * The verified core files and wheels, by file name; every file must match or nothing is returned.
 * @param {URL} base the folder the core files are served from
 * @param {{cache?: boolean, wheelBase?: URL}} [o] cache: use the Cache API store (default true);
 *   wheelBase: the folder of the wheels (default: browser/wheels/ next to this module)
 * @returns {Promise<Record<string, ArrayBuffer>>}
 */
export async function loadPyodideFiles(base, o = {}) {
  const wheelBase = o.wheelBase || new URL('../wheels/', import.meta.url);
  /** @type {{name: string, want: {sha256: string, size: number}, from: URL, what: string}[]} */
  const entries = [
    ...Object.entries(PYODIDE_MANIFEST.files).map(([name, want]) => ({ name, want, from: base, what: 'Pyodide core file' })),
    ...Object.values(PYODIDE_MANIFEST.wheels).map((w) => ({ name: w.file, want: w, from: wheelBase, what: 'wheel' })),
  ];
  const bytes = await Promise.all(entries.map((e) => verifiedFile(e.from, e.name, e.want, o.cache !== false, e.what)));
  return Object.fromEntries(entries.map((e, i) => [e.name, bytes[i]]));
}

/** What the harness is told of the shipped wheels: {NAME: {version, file, imports}} (the bytes travel in `files`). */
export const WHEEL_INDEX = Object.freeze(Object.fromEntries(Object.entries(PYODIDE_MANIFEST.wheels)
  .map(([name, w]) => [name, { version: w.version, file: w.file, imports: w.imports }])));

/** Forgets the verified bytes of this page and, with `cache`, the Cache API store (the benchmark's cold start). */
export async function forgetPyodideFiles({ cache = false } = {}) {
  verified.clear();
  if (cache && globalThis.caches) await caches.delete(PYODIDE_CACHE);
}

/**
 * The assets of a Python sandbox, from the JS sandbox's (same supervisor and hash).
 * @param {{bootstrap: string, harness: string, hash: string, csp: string}} js
 * @param {string} pythonHarness python_harness.js
 * @param {Record<string, ArrayBuffer>} files the verified core files
 * @param {{pythonNoWasmEval?: boolean, pythonStartTimeoutMs?: number}} [testing] negative controls of the checks, never in a product page
 */
export function pythonAssets(js, pythonHarness, files, testing = {}) {
  return Object.freeze({
    ...js,
    harness: js.harness + '\n' + pythonHarness,
    csp: pythonCsp(js.hash, Boolean(testing.pythonNoWasmEval)),
    kind: 'module',
    startTimeoutMs: testing.pythonStartTimeoutMs || PYTHON_START_TIMEOUT_MS,
    // Each sandbox gets its own copies (they are transferred, so detached in the host).
    files: () => Object.fromEntries(Object.entries(files).map(([n, b]) => [n, b.slice(0)])),
    // The Python code and the wheel index travel as JSON literals: data to the harness, never JS.
    wrap: (code) => `__taskyonPython(${JSON.stringify(code)}, ${JSON.stringify(WHEEL_INDEX)});\n`,
  });
}
