// The fetch policy for a browser host, from the wasm core: a `decide(request)`
// for browser/host's SandboxHost ({decide} option; browser/host/policy.js is
// the seam). Steps 2 and 3 of DESIGN §6 only (URL policy, method class), before
// resolution, since a page never sees addresses: a domain that passes every
// rule is allowed here and Chromium's public-address-space restriction (direct
// mode) or the server's egress proxy (strict mode) judges its addresses. The
// grant for (revision, origin, access) is the caller's next step.

/** @typedef {{allow: true, origin: string, access: string, href: string} | {allow: false, code: string, message: string}} Verdict */

/**
 * @param {{decideFetch: (text: string) => any}} core  from instantiate() (core.mjs)
 * @returns {(request: {url: string, method?: string}) => Promise<Verdict>}
 */
export function wasmDecider(core) {
  return async (request) => {
    const answer = core.decideFetch(JSON.stringify({ url: String(request.url), method: String(request.method ?? 'GET') }));
    if (!answer.ok) return { allow: false, code: answer.error.code, message: answer.error.message };
    const d = answer.value;
    if (!d.admitted) {
      const code = d.verdict === 'deny' ? `policy_${d.reasonClass}` : 'policy_method';
      return { allow: false, code, message: d.verdict === 'deny' ? d.reason : d.methodReason };
    }
    return { allow: true, origin: d.origin, access: d.access, href: d.href };
  };
}
