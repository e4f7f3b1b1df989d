// Loads the wasm core in a page (issue 14): fetches build-wasm/taskyon_core.wasm
// from `url` and instantiates it (core.mjs). The page's CSP must allow
// 'wasm-unsafe-eval' (WebAssembly.compile); the sandbox iframes never get it
// from here, since a srcdoc iframe's own CSP still applies.
//
//   const r = await loadCore('/build-wasm/taskyon_core.wasm');
//   r.ok ? r.core : r.reason   // reason: the module is absent (HTTP 404) or did not compile
import { instantiate } from './core.mjs';

/**
 * @param {string | URL} url  where the page server serves the module
 * @returns {Promise<{ok: true, core: import('./core.mjs').Core, bytes: number} | {ok: false, absent: boolean, reason: string}>}
 */
export async function loadCore(url) {
  let res;
  try {
    res = await fetch(url, { cache: 'no-store' });
  } catch (e) {
    return { ok: false, absent: false, reason: `fetching ${url} failed: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (res.status === 404) return { ok: false, absent: true, reason: `${url} is absent (HTTP 404): build it with \`make wasm\`` };
  if (!res.ok) return { ok: false, absent: false, reason: `${url}: HTTP ${res.status}` };
  const bytes = await res.arrayBuffer();
  try {
    return { ok: true, core: await instantiate(bytes), bytes: bytes.byteLength };
  } catch (e) {
    return { ok: false, absent: false, reason: `the wasm core did not instantiate: ${e instanceof Error ? e.message : String(e)}` };
  }
}
