// The WebAssembly core's loader (issue 14, DESIGN §9): the C++ rules of
// src/taskyon/abi/abi.h, built by `make wasm` as build-wasm/taskyon_core.wasm,
// for Node and the browser alike (no Node API, no fetch: the caller hands in
// the bytes, e.g. after checking their SHA-256).
//
//   const core = await instantiate(bytes);
//   core.decideFetch('{"url":"https://127.0.0.1/"}')
//     -> {ok: true, value: {verdict: "deny", reasonClass: "loopback", ...}}
//
// Every rule method takes JSON text and returns the parsed answer
// ({ok, value} or {ok: false, error: {code, message, where}}); core.raw has the
// same methods returning the answer's text as the module wrote it. A trap
// inside the module (the build has no exceptions: what would throw aborts,
// e.g. a JSON Schema valijson cannot read) is answered with the error code
// "internal", and the next call runs in a fresh instance of the same module.
// The WASI shim gives no files, no environment, no clock, no randomness:
// stdout and stderr are collected (lastStderr) and nothing else is reachable.

/** @typedef {{code: string, message: string, where: string}} CoreError */
/** @typedef {{ok: true, value: any} | {ok: false, error: CoreError}} CoreAnswer */
/**
 * @typedef {object} Core
 * @property {(text: string) => CoreAnswer} canonicalize
 * @property {(text: string) => CoreAnswer} manifest
 * @property {(text: string) => CoreAnswer} validateArguments
 * @property {(text: string) => CoreAnswer} parseUrl
 * @property {(text: string) => CoreAnswer} decideFetch
 * @property {(text: string) => CoreAnswer} compile
 * @property {(text: string) => CoreAnswer} compileSubtasks
 * @property {(text: string) => CoreAnswer} resolveInvocation
 * @property {(text: string) => CoreAnswer} checkTask
 * @property {(text: string) => CoreAnswer} info
 * @property {Record<string, (text: string) => string>} raw
 * @property {() => number} instances  how many instances were made (1 + one per trap)
 * @property {() => string} lastStderr  what the module last wrote to fd 1 or 2
 */

/** The ABI functions: loader method name -> export name. */
export const FUNCTIONS = Object.freeze({
  canonicalize: 'taskyon_canonicalize',
  manifest: 'taskyon_manifest',
  validateArguments: 'taskyon_validate_arguments',
  parseUrl: 'taskyon_parse_url',
  decideFetch: 'taskyon_decide_fetch',
  compile: 'taskyon_compile',
  compileSubtasks: 'taskyon_compile_subtasks',
  resolveInvocation: 'taskyon_resolve_invocation',
  checkTask: 'taskyon_check_task',
  info: 'taskyon_info',
});

const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_SPIPE = 70;

class ProcExit extends Error {
  /** @param {number} code */
  constructor(code) {
    super(`the wasm core exited (code ${code})`);
    this.code = code;
  }
}

/**
 * @param {WebAssembly.Module} module
 * @param {{text: string}} stderr
 */
async function makeInstance(module, stderr) {
  /** @type {WebAssembly.Memory | undefined} */
  let memory;
  const view = () => new DataView(/** @type {WebAssembly.Memory} */ (memory).buffer);
  const decoder = new TextDecoder();
  const wasi = {
    environ_sizes_get: (/** @type {number} */ count, /** @type {number} */ size) => {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return ERRNO_SUCCESS;
    },
    environ_get: () => ERRNO_SUCCESS,
    fd_close: () => ERRNO_BADF,
    fd_seek: () => ERRNO_SPIPE,
    fd_read: (/** @type {number} */ _fd, /** @type {number} */ _iovs, /** @type {number} */ _n, /** @type {number} */ nread) => {
      view().setUint32(nread, 0, true);
      return ERRNO_SUCCESS;
    },
    fd_fdstat_get: (/** @type {number} */ fd, /** @type {number} */ stat) => {
      if (fd > 2) return ERRNO_BADF;
      const v = view();
      v.setUint8(stat, 2);  // filetype: character device
      v.setUint16(stat + 2, 0, true);  // flags
      v.setBigUint64(stat + 8, 0n, true);  // rights
      v.setBigUint64(stat + 16, 0n, true);
      return ERRNO_SUCCESS;
    },
    fd_write: (/** @type {number} */ fd, /** @type {number} */ iovs, /** @type {number} */ n, /** @type {number} */ written) => {
      if (fd !== 1 && fd !== 2) return ERRNO_BADF;
      const v = view();
      let total = 0;
      for (let i = 0; i < n; ++i) {
        const ptr = v.getUint32(iovs + 8 * i, true);
        const len = v.getUint32(iovs + 8 * i + 4, true);
        const bytes = new Uint8Array(v.buffer, ptr, len);
        stderr.text = (stderr.text + decoder.decode(bytes)).slice(-4096);
        total += len;
      }
      v.setUint32(written, total, true);
      return ERRNO_SUCCESS;
    },
    proc_exit: (/** @type {number} */ code) => {
      throw new ProcExit(code);
    },
  };
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi });
  const exports = /** @type {Record<string, any>} */ (instance.exports);
  memory = exports.memory;
  exports._initialize();
  return exports;
}

/**
 * Compiles and instantiates the core.
 * @param {BufferSource | WebAssembly.Module} bytes  the module's bytes (or a compiled module)
 * @returns {Promise<Core>}
 */
export async function instantiate(bytes) {
  const module = bytes instanceof WebAssembly.Module ? bytes : await WebAssembly.compile(bytes);
  const stderr = { text: '' };
  let exports = await makeInstance(module, stderr);
  let count = 1;
  /** @type {Promise<void> | null} */
  let pending = null;
  let broken = false;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

  /** @param {string} name @param {string} text @returns {string} */
  function callRaw(name, text) {
    if (broken) {
      return JSON.stringify({ ok: false, error: { code: 'internal', message: 'the wasm core is being re-instantiated after a trap; call again', where: '' } });
    }
    const input = encoder.encode(String(text));
    const inPtr = exports.taskyon_alloc(input.length);
    const lenPtr = exports.taskyon_alloc(4);
    try {
      new Uint8Array(exports.memory.buffer, inPtr, input.length).set(input);
      const outPtr = exports[name](inPtr, input.length, lenPtr);
      const outLen = new DataView(exports.memory.buffer).getUint32(lenPtr, true);
      const out = decoder.decode(new Uint8Array(exports.memory.buffer, outPtr, outLen));
      exports.taskyon_free(outPtr);
      exports.taskyon_free(inPtr);
      exports.taskyon_free(lenPtr);
      return out;
    } catch (e) {
      // A trap leaves the instance in an unknown state: never use it again.
      broken = true;
      const why = e instanceof Error ? e.message : String(e);
      pending = makeInstance(module, stderr).then((fresh) => {
        exports = fresh;
        count += 1;
        broken = false;
        pending = null;
      });
      return JSON.stringify({
        ok: false,
        error: { code: 'internal', message: `the wasm core trapped (${why}); it runs again in a fresh instance`, where: '' },
      });
    }
  }

  /** @type {Record<string, (text: string) => string>} */
  const raw = {};
  /** @type {Record<string, any>} */
  const core = { raw };
  for (const [method, name] of Object.entries(FUNCTIONS)) {
    raw[method] = (text) => callRaw(name, text);
    core[method] = (/** @type {string} */ text) => JSON.parse(callRaw(name, text));
  }
  core.instances = () => count;
  core.lastStderr = () => stderr.text;
  /** Resolves once a re-instantiation after a trap is done. */
  core.ready = () => pending ?? Promise.resolve();
  return /** @type {Core & {ready: () => Promise<void>}} */ (core);
}
