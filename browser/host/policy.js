// The one seam where the fetch policy plugs in: `decide(request) -> verdict`.
//
// request: {revision, session, tool, url, method, headers: [[name, value]...]}
// verdict: {allow: true, headers?: [[name, value]...]} | {allow: false, code: string, message: string}
//          (headers: what to send instead of the tool's, e.g. with host-side secrets filled: store.js)
//
// The rules themselves (WHATWG URL + IDNA, address classes, method classes,
// grants per (revision, origin, access)) are the C++ core built as WebAssembly
// (browser/core/, issue 14 part 1); the browser never re-writes a rule in JS.
// A page wires it in with `new SandboxHost({decide: wasmDecider(core)})`
// (browser/core/policy.mjs, the core from browser/core/load.mjs), as the
// checks' page and the demo do; a SandboxHost given no decider keeps this
// default, which refuses every mediated request with `policy_unavailable`.

/** @param {object} _request @returns {Promise<{allow: boolean, code?: string, message?: string}>} */
export async function refuseAll(_request) {
  return {
    allow: false,
    code: 'policy_unavailable',
    message: 'no fetch policy is loaded in this page (the WebAssembly core, browser/core/, is not wired in); every mediated request is refused',
  };
}
