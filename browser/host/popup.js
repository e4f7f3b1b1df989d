// Host-owned popup windows (DESIGN §9 B5, §7 M16; issue 14 item 5).
//
// * Sandboxed tool code can never open a window: a worker has no `open`, the
//   sandbox iframe has no `allow-popups`, and no sandbox message asks for one
//   (validate.js knows no such type: a sandbox that sends one is destroyed).
// * A popup is opened by the HOST PAGE for a trusted host tool (a revision the
//   page names in `trusted`: host code the user installed with trust, never a
//   sandboxed tool), only while the page has the user's transient activation
//   (a click), and only with a stored permission for that (revision, target),
//   target being `custom-html` or one exact HTTPS origin — the key of the CLI
//   store's popup permissions (`tycli popup grant REV TARGET`, docs/grants.md).
// * Every window is opened with `noopener,noreferrer`: it has no `opener`, the
//   host gets no handle to it, and it is a browsing context group of its own.
// * Custom HTML never runs in the host origin. Never `about:blank` +
//   `document.write` and never `allow-popups-to-escape-sandbox` (both give the
//   HTML the host's origin, BROWSER.md): the window is a script-free blob:
//   document of the host whose only content is
//   `<iframe sandbox="allow-scripts" srcdoc="…">` — the HTML runs in an opaque
//   origin ("null"), under a CSP (inherited by the srcdoc) that admits inline
//   script and style, data:/blob: images and nothing from the network.
// * Every decision is appended to `popups.log` {seq, at, tool, revision,
//   target, verdict: 'opened'|'refused', code} and, given `audit` (e.g. the
//   browser store's), to the audit log as {revision, capability: 'popup',
//   target, access: null, verdict: 'allow'|'deny', reason: the code or
//   'opened'}, as the CLI audits its popup decisions.
//
// Refusal codes: `not_trusted`, `bad_target`, `no_permission`,
// `no_user_activation`, `too_large`, `open_failed`.

/** The target name of custom HTML (the other targets are exact HTTPS origins). */
export const CUSTOM_HTML = 'custom-html';

/** Largest custom HTML document, in bytes of UTF-16 code units (1 MiB). */
export const MAX_HTML = 1 << 20;

/** The CSP of a custom-HTML popup (its srcdoc iframe inherits it): no network at all. */
export const POPUP_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'";

/** How long a popup's blob: URL stays resolvable (ms): the new window must load it first. */
const BLOB_LIFETIME_MS = 60000;

/**
 * The canonical form of a popup target, or null when it is neither `custom-html`
 * nor an exact HTTPS origin (`https://host[:port]`, no path, query, fragment or
 * credentials; the string must already be the origin's serialization).
 * @param {unknown} target @returns {string|null}
 */
export function popupTarget(target) {
  if (target === CUSTOM_HTML) return CUSTOM_HTML;
  if (typeof target !== 'string') return null;
  let u;
  try { u = new URL(target); } catch { return null; }
  if (u.protocol !== 'https:' || u.origin !== target) return null;
  return u.origin;
}

function keyOf(revision, target) { return JSON.stringify([revision, target]); }

/**
 * Popup permissions per (revision, target), as the CLI store keeps them. In
 * memory: the IndexedDB store (issue 14 item 6) is not built; it will take this
 * interface (or the server's store, through `tycli serve`, once it offers one).
 */
export class PopupPermissions {
  constructor() { /** @type {Map<string, {revision: string, target: string, at: number}>} */ this._m = new Map(); }

  /** @returns {{ok: true} | {ok: false, code: string, message: string}} */
  grant(revision, target) {
    const t = popupTarget(target);
    if (typeof revision !== 'string' || !revision || t === null) {
      return { ok: false, code: 'bad_target', message: 'a popup permission needs a revision id and custom-html or an exact https:// origin' };
    }
    this._m.set(keyOf(revision, t), { revision, target: t, at: Date.now() });
    return { ok: true };
  }

  revoke(revision, target) { return this._m.delete(keyOf(revision, popupTarget(target))); }

  has(revision, target) { return this._m.has(keyOf(revision, target)); }

  list() { return [...this._m.values()]; }
}

function escapeAttribute(s) {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The script-free wrapper document of a custom-HTML popup. */
export function customHtmlDocument(html, title = 'Taskyon') {
  return '<!doctype html><html><head>'
    + `<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(POPUP_CSP)}">`
    + `<meta charset="utf-8"><title>${escapeAttribute(String(title))}</title>`
    + '<style>html,body{margin:0;height:100%}iframe{border:0;width:100%;height:100%;display:block}</style>'
    + `</head><body><iframe sandbox="allow-scripts" referrerpolicy="no-referrer" srcdoc="${escapeAttribute(html)}"></iframe></body></html>`;
}

export class PopupHost {
  /**
   * @param {object} o
   * @param {PopupPermissions} o.permissions
   * @param {Iterable<string>} o.trusted revision ids of the page's trusted host tools
   * @param {{open: typeof window.open, userActivation: () => boolean}} [o.window] the page's window (tests only)
   * @param {(row: {revision: string, capability: string, target: string, access: null, verdict: string, reason: string}) => unknown} [o.audit]
   *        appends one decision to an audit log (BrowserStore#audit); a failure to append is kept in `auditErrors`
   */
  constructor(o) {
    this._audit = o.audit || null;
    this.auditErrors = [];
    this._permissions = o.permissions;
    this._trusted = new Set(o.trusted || []);
    this._open = o.window?.open || ((url, name, features) => window.open(url, name, features));
    this._activation = o.window?.userActivation || (() => Boolean(navigator.userActivation && navigator.userActivation.isActive));
    this.log = [];
  }

  /** @returns {{ok: boolean, code?: string, message?: string}} */
  _decide(tool, revision, target, verdict, code, message = '') {
    this.log.push({ seq: this.log.length + 1, at: performance.now(), tool, revision, target, verdict, code });
    if (this._audit) {
      // open() stays synchronous (window.open needs the click's activation): the row is appended meanwhile.
      const row = { revision: String(revision ?? ''), capability: 'popup', target: String(target ?? ''), access: null,
        verdict: verdict === 'opened' ? 'allow' : 'deny', reason: code || 'opened' };
      Promise.resolve().then(() => this._audit(row)).catch((e) => { this.auditErrors.push(String(e && e.message)); });
    }
    return verdict === 'opened' ? { ok: true } : { ok: false, code, message };
  }

  /**
   * Opens a popup for a trusted host tool; call it from the user's click handler.
   * @param {{tool: string, revision: string, url?: string, html?: string, title?: string}} r
   *        `url`: an https URL whose exact origin is permitted; `html`: a document (needs custom-html)
   * @returns {{ok: boolean, code?: string, message?: string}} code and message when refused
   */
  open(r) {
    const { tool, revision } = r;
    const isHtml = typeof r.html === 'string';
    if (r.title !== undefined && typeof r.title !== 'string') {
      return this._decide(tool, revision, String(isHtml ? CUSTOM_HTML : r.url), 'refused', 'bad_request', 'a popup title must be a string');
    }
    let target = CUSTOM_HTML, url = '';
    if (!isHtml) {
      try { url = new URL(String(r.url)).href; target = popupTarget(new URL(url).origin); } catch { target = null; }
      if (target === null || target === CUSTOM_HTML) {
        return this._decide(tool, revision, String(r.url), 'refused', 'bad_target', 'a popup opens custom HTML or an https:// URL');
      }
    }
    if (!this._trusted.has(revision)) {
      return this._decide(tool, revision, target, 'refused', 'not_trusted', 'only a trusted host tool opens popups; sandboxed tools never do');
    }
    if (!this._permissions.has(revision, target)) {
      return this._decide(tool, revision, target, 'refused', 'no_permission', `${tool} (${revision}) holds no popup permission for ${target}`);
    }
    if (!this._activation()) {
      return this._decide(tool, revision, target, 'refused', 'no_user_activation', 'a popup opens only from the user\'s click');
    }
    if (isHtml && r.html.length > MAX_HTML) {
      return this._decide(tool, revision, target, 'refused', 'too_large', `custom HTML over ${MAX_HTML} bytes`);
    }
    if (isHtml) {
      url = URL.createObjectURL(new Blob([customHtmlDocument(r.html, r.title)], { type: 'text/html' }));
      setTimeout(() => URL.revokeObjectURL(url), BLOB_LIFETIME_MS);
    }
    // With noopener the result is always null: the host never holds the window.
    try {
      this._open(url, '_blank', 'noopener,noreferrer');
    } catch (e) {
      return this._decide(tool, revision, target, 'refused', 'open_failed', String(e && e.message));
    }
    return this._decide(tool, revision, target, 'opened', '');
  }
}
