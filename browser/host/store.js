// The browser store (issue 14 item 6; docs/browser.md "The browser store"): the
// records of the SQLite store (docs/tasks.md, docs/grants.md) in IndexedDB, in
// the host page's origin, out of reach of sandboxed code (opaque origins).
//
// * revisions by content id, re-hashed by the wasm core on every read (R1, R2):
//   a row whose definition no longer gives its id is refused ("tampered");
// * bindings (name -> active revision) and their history, oldest first;
// * grants per (revision, origin, access class) (M8, M17);
// * secrets per (revision, origin, name): tool code never sees one; the host
//   page fills a `{{secret:NAME}}` header placeholder only in a granted request
//   to that origin (grantedDecider), as the CLI's fetch does;
// * popup permissions (M16), persisted under popupPermissions();
// * tool storage (S7): data per tool name and key, reachable only through a
//   storage grant of the calling revision, with the CLI's quotas
//   (storageCapability);
// * tasks by content id (T4), each re-hashed by the wasm core on read, and tool
//   settings revisions bound per tool name (as the CLI's tycli settings), for
//   the tree capabilities (tasks.js: createSubtasksResult M14, resolveInvocation
//   M15) and compileCall;
// * an append-only audit log and the sandbox log: the API has no way to change
//   or delete a row.
// Ids come from the wasm core (core.manifest), never from a JS re-write of R1.

import { PopupPermissions } from './popup.js';

/** Tool storage quotas (docs/grants.md "Storage", the CLI's StorageQuota); bytes of UTF-8. */
export const STORAGE_QUOTA = Object.freeze({ keyBytes: 256, valueBytes: 64 << 10, keys: 1000, toolBytes: 1 << 20 });
const utf8Length = (s) => new TextEncoder().encode(s).length;

/** The CLI's audit bound (store/audit.h kMaxAuditText, kAuditTextPrefix): bytes of UTF-8. */
export const AUDIT_TEXT = Object.freeze({ max: 512, prefix: 160 });

/**
 * A target or reason as the audit keeps it (the CLI's bounded_audit_text): whole when at most
 * 512 bytes, else its first 160 bytes (whole characters), "…", its size and its SHA-256.
 */
async function boundedAuditText(text) {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= AUDIT_TEXT.max) return text;
  let cut = AUDIT_TEXT.prefix;
  while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut--;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  const hex = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${new TextDecoder().decode(bytes.subarray(0, cut))} … (${bytes.length} bytes, sha256:${hex})`;
}
const ACCESS = new Set(['read', 'write']);
const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const PLACEHOLDER = /\{\{secret:([A-Za-z0-9_.-]{1,64})\}\}/g;

/** A store failure with a stable code: tampered, not_found, bad_request, io. */
export class StoreError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) { super(message); this.code = code; }
}

/** @param {IDBRequest} r @returns {Promise<any>} */
function done(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(new StoreError('io', 'IndexedDB: ' + (r.error && r.error.message)));
  });
}

export class BrowserStore {
  /**
   * @param {IDBDatabase} db
   * @param {{manifest: (text: string) => any, canonicalize: (text: string) => any, compile: (text: string) => any, checkTask: (text: string) => any}} core the wasm core
   *        (browser/core/core.mjs instantiate())
   */
  constructor(db, core) {
    this._db = db;
    this._core = core;
    /** @type {Promise<CryptoKey>|null} */ this._identityKey = null;
    /** @type {string|null} */ this._emptySettingsId = null;
  }

  /**
   * Opens (creating on first use) the store `name` of this origin.
   * @param {string} name @param {{core: {manifest: (text: string) => any, canonicalize: (text: string) => any, compile: (text: string) => any, checkTask: (text: string) => any}}} o
   */
  static async open(name, o) {
    if (!o || !o.core) throw new StoreError('bad_request', 'the browser store needs the wasm core (ids are its, R1)');
    const req = indexedDB.open(name, 2);
    req.onupgradeneeded = (event) => {
      const db = req.result;
      if (event.oldVersion < 2) {  // version 2: the task tree and settings (createSubtasksResult, resolveInvocation)
        db.createObjectStore('tasks', { keyPath: 'id' });
        db.createObjectStore('settings', { keyPath: 'id' });
        db.createObjectStore('settings_bindings', { keyPath: 'name' });
        db.createObjectStore('settings_history', { keyPath: 'seq', autoIncrement: true });
        db.createObjectStore('meta', { keyPath: 'name' });
      }
      if (event.oldVersion >= 1) return;
      db.createObjectStore('revisions', { keyPath: 'id' });
      db.createObjectStore('bindings', { keyPath: 'name' });
      for (const s of ['history', 'audit', 'sandbox_log']) db.createObjectStore(s, { keyPath: 'seq', autoIncrement: true });
      db.createObjectStore('grants', { keyPath: ['revision', 'origin', 'access'] });
      db.createObjectStore('secrets', { keyPath: ['revision', 'origin', 'name'] });
      db.createObjectStore('popups', { keyPath: ['revision', 'target'] });
      db.createObjectStore('storage_grants', { keyPath: 'revision' });
      db.createObjectStore('storage', { keyPath: ['tool', 'key'] });
    };
    return new BrowserStore(await done(req), o.core);
  }

  close() { this._db.close(); }

  /** @param {string} store @param {'readonly'|'readwrite'} mode */
  _os(store, mode = 'readonly') { return this._db.transaction(store, mode).objectStore(store); }

  /** The revision id and canonical form of a definition, from the wasm core; StoreError bad_request if invalid. */
  _identify(definition) {
    const answer = this._core.manifest(JSON.stringify(definition));
    if (!answer.ok) throw new StoreError('bad_request', `not a valid manifest: ${answer.error.code}: ${answer.error.message}`);
    return answer.value;
  }

  // ------------------------------------------------------------------ revisions and bindings

  /**
   * Stores a tool definition under its content id (R1); with activate, binds its name to it.
   * @returns {Promise<{revision: string, name: string, created: boolean}>}
   */
  async install(definition, { activate = true } = {}) {
    const { revision } = this._identify(definition);
    const name = String(definition.name);
    const existing = await done(this._os('revisions').get(revision));
    if (!existing) await done(this._os('revisions', 'readwrite').add({ id: revision, definition: JSON.stringify(definition), at: Date.now() }));
    if (activate) await this.activate(name, revision);
    return { revision, name, created: !existing };
  }

  /**
   * A stored revision, re-hashed on read: StoreError not_found, or tampered when its definition
   * no longer gives its id. @returns {Promise<{id: string, definition: any}>}
   */
  async revision(id) {
    const row = await done(this._os('revisions').get(String(id)));
    if (!row) throw new StoreError('not_found', `no revision ${id} in the browser store`);
    let definition, again = '';
    try {
      definition = JSON.parse(row.definition);
      again = this._identify(definition).revision;
    } catch { /* unparsable or invalid: tampered as well */ }
    if (again !== row.id) throw new StoreError('tampered', `revision ${row.id} was changed in the store: its definition hashes to ${again || 'nothing valid'} (R2)`);
    return { id: row.id, definition };
  }

  /** Binds `name` to a stored revision of that name (and records it in the history). */
  async activate(name, revision) {
    const r = await this.revision(revision);
    if (r.definition.name !== name) throw new StoreError('bad_request', `revision ${revision} is a revision of ${r.definition.name}, not ${name}`);
    await done(this._os('bindings', 'readwrite').put({ name, revision, at: Date.now() }));
    await done(this._os('history', 'readwrite').add({ name, revision, at: Date.now() }));
  }

  /** The revision `name` is bound to, or null. */
  async active(name) {
    const b = await done(this._os('bindings').get(String(name)));
    return b ? b.revision : null;
  }

  /** Every activation of `name`, oldest first: [{revision, at}]. */
  async history(name) {
    const rows = await done(this._os('history').getAll());
    return rows.filter((h) => h.name === name).map(({ revision, at }) => ({ revision, at }));
  }

  // ------------------------------------------------------------------ grants and secrets

  /** A grant for (revision, origin, access class); the origin as the policy serializes it. */
  async grant(revision, origin, access) {
    if (!ACCESS.has(access)) throw new StoreError('bad_request', 'access is read or write');
    await this.revision(revision);  // only revisions the store holds (and intact)
    await done(this._os('grants', 'readwrite').put({ revision, origin: String(origin), access, at: Date.now() }));
  }

  async revoke(revision, origin, access) { await done(this._os('grants', 'readwrite').delete([revision, String(origin), access])); }

  /** @returns {Promise<boolean>} */
  async granted(revision, origin, access) {
    return Boolean(await done(this._os('grants').get([String(revision), String(origin), String(access)])));
  }

  /** [{revision, origin, access, at}] */
  async grants() { return done(this._os('grants').getAll()); }

  /** A secret of (revision, origin, name); the value never leaves the host page. */
  async setSecret(revision, origin, name, value) {
    if (!SECRET_NAME.test(name)) throw new StoreError('bad_request', 'secret names match ^[A-Za-z0-9_.-]{1,64}$');
    if (typeof value !== 'string' || value.length < 1 || value.length > 8192 || /[\r\n\0]/.test(value)) {
      throw new StoreError('bad_request', 'a secret is 1..8192 characters without CR, LF or NUL (it goes into a header)');
    }
    await this.revision(revision);
    await done(this._os('secrets', 'readwrite').put({ revision, origin: String(origin), name, value }));
  }

  /** Names, origins and revisions of the secrets, never their values. */
  async secretNames() {
    return (await done(this._os('secrets').getAll())).map(({ revision, origin, name }) => ({ revision, origin, name }));
  }

  async _secret(revision, origin, name) {
    const row = await done(this._os('secrets').get([revision, origin, name]));
    return row ? row.value : null;
  }

  // ------------------------------------------------------------------ popups

  /**
   * A PopupPermissions (popup.js) holding the stored permissions, whose grant/revoke are
   * written to the store too (`saved` settles when the last write did).
   */
  async popupPermissions() {
    const perms = new PopupPermissions();
    for (const p of await done(this._os('popups').getAll())) perms.grant(p.revision, p.target);
    const store = this;
    const grant = perms.grant.bind(perms), revoke = perms.revoke.bind(perms);
    /** @type {any} */ (perms).saved = Promise.resolve();
    perms.grant = (revision, target) => {
      const r = grant(revision, target);
      if (r.ok) /** @type {any} */ (perms).saved = done(store._os('popups', 'readwrite').put({ revision, target: String(target), at: Date.now() }));
      return r;
    };
    perms.revoke = (revision, target) => {
      const had = revoke(revision, target);
      /** @type {any} */ (perms).saved = done(store._os('popups', 'readwrite').delete([revision, String(target)]));
      return had;
    };
    return perms;
  }

  // ------------------------------------------------------------------ tool storage (S7)

  /** A storage grant for a revision the store holds; the data is the tool name's. */
  async grantStorage(revision) {
    await this.revision(revision);
    await done(this._os('storage_grants', 'readwrite').put({ revision, at: Date.now() }));
  }

  /** Revokes it; the stored data is kept (as the CLI's revoke storage). */
  async revokeStorage(revision) { await done(this._os('storage_grants', 'readwrite').delete(String(revision))); }

  async _storageGranted(revision) { return Boolean(await done(this._os('storage_grants').get(String(revision)))); }

  /** One operation of context.storage for (revision, tool); see storageCapability. */
  async _storageOp(op, key, json, who) {
    const refuse = (code, message) => ({ ok: false, code, message });
    if (!(await this._storageGranted(who.revision))) return refuse('denied', `revision ${who.revision} holds no storage grant (S7)`);
    if (op === 'list') {
      const rows = await done(this._os('storage').getAll());
      const keys = rows.filter((r) => r.tool === who.tool && r.key.startsWith(key)).map((r) => r.key).sort();
      return { ok: true, json: JSON.stringify(keys) };
    }
    if (key.length === 0 || utf8Length(key) > STORAGE_QUOTA.keyBytes || key.isWellFormed?.() === false) {
      return refuse('invalid_request', `a storage key is 1..${STORAGE_QUOTA.keyBytes} bytes of UTF-8`);
    }
    const row = await done(this._os('storage').get([who.tool, key]));
    if (op === 'get') return { ok: true, json: row ? row.value : 'null' };
    if (who.live && !who.live()) return refuse('call_ended', 'the call ended before its storage.' + op + ' was done');
    if (op === 'delete') {
      if (row) await done(this._os('storage', 'readwrite').delete([who.tool, key]));
      return { ok: true, json: row ? 'true' : 'false' };
    }
    const canonical = this._core.canonicalize(json);  // the value as the CLI stores it (RFC 8785)
    if (!canonical.ok) return refuse('invalid_request', `the value cannot be stored: ${canonical.error.message}`);
    const value = String(canonical.value.canonical);
    if (utf8Length(value) > STORAGE_QUOTA.valueBytes) return refuse('too_large', `a stored value is at most ${STORAGE_QUOTA.valueBytes} bytes canonical`);
    const rows = (await done(this._os('storage').getAll())).filter((r) => r.tool === who.tool && r.key !== key);
    if (rows.length + 1 > STORAGE_QUOTA.keys) return refuse('too_large', `a tool stores at most ${STORAGE_QUOTA.keys} keys`);
    const bytes = rows.reduce((n, r) => n + utf8Length(r.key) + utf8Length(r.value), 0) + utf8Length(key) + utf8Length(value);
    if (bytes > STORAGE_QUOTA.toolBytes) return refuse('too_large', `a tool stores at most ${STORAGE_QUOTA.toolBytes} bytes`);
    if (who.live && !who.live()) return refuse('call_ended', 'the call ended before its storage.set was done');
    await done(this._os('storage', 'readwrite').put({ tool: who.tool, key, value }));
    return { ok: true, json: 'null' };
  }

  // ------------------------------------------------------------------ tasks and settings

  /**
   * Stores tasks (task JSON, as the wasm core compiled them), each checked by the core (T4: its id
   * is the hash of its identity); a task's parent must be stored or come earlier in `tasks`. A task
   * already stored is left as it is. StoreError bad_request for a task the core refuses.
   */
  async putTasks(tasks) {
    const known = new Set();
    for (const t of tasks) {
      const checked = this._core.checkTask(JSON.stringify({ task: t }));
      if (!checked.ok) throw new StoreError('bad_request', `not a valid task: ${checked.error.code}: ${checked.error.message} (${checked.error.where})`);
      const task = checked.value.task;
      if (task.parentId !== null && !known.has(task.parentId) && !(await done(this._os('tasks').get(task.parentId)))) {
        throw new StoreError('bad_request', `task ${task.id}: its parent ${task.parentId} is not in the store`);
      }
      known.add(task.id);
      if (!(await done(this._os('tasks').get(task.id)))) await done(this._os('tasks', 'readwrite').add({ id: task.id, task: JSON.stringify(task), at: Date.now() }));
    }
  }

  /** A stored task, re-hashed on read: StoreError not_found, or tampered. @returns {Promise<any>} task JSON */
  async task(id) {
    const row = await done(this._os('tasks').get(String(id)));
    if (!row) throw new StoreError('not_found', `no task ${id} in the browser store`);
    let checked = null;
    try { checked = this._core.checkTask(`{"task":${row.task}}`); } catch { /* unparsable: tampered */ }
    if (!checked || !checked.ok || checked.value.task.id !== row.id) {
      throw new StoreError('tampered', `task ${row.id} was changed in the store: ${checked && !checked.ok ? checked.error.message : 'its row is not a task'} (T4)`);
    }
    return checked.value.task;
  }

  /** The task `id` and its ancestors, root first, each re-hashed. @returns {Promise<any[]>} */
  async lineage(id) {
    const out = [];
    for (let at = String(id); at !== null; at = out[out.length - 1].parentId) {
      if (out.length >= 10000) throw new StoreError('tampered', `task ${id} has more than 10000 ancestors`);
      out.push(await this.task(at));
    }
    return out.reverse();
  }

  /** Binds tool `name` to the settings `value` (a JSON object); its revision is the core's content id. */
  async setSettings(name, value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StoreError('bad_request', 'settings are a JSON object');
    const c = this._core.canonicalize(JSON.stringify(value));
    if (!c.ok) throw new StoreError('bad_request', `the settings cannot be stored: ${c.error.message}`);
    if (utf8Length(c.value.canonical) > 256 * 1024) throw new StoreError('bad_request', 'settings are at most 256 KiB canonical (the CLI\'s kMaxSettingsBytes)');
    const { id, canonical } = c.value;
    await done(this._os('settings', 'readwrite').put({ id, canonical }));
    await done(this._os('settings_bindings', 'readwrite').put({ name: String(name), settings: id, at: Date.now() }));
    await done(this._os('settings_history', 'readwrite').add({ name: String(name), settings: id, at: Date.now() }));
    return id;
  }

  /** The settings revision `name` is bound to, or the empty settings' id (a name never bound). */
  async settingsRevision(name) {
    const b = await done(this._os('settings_bindings').get(String(name)));
    return b ? b.settings : this._emptySettings();
  }

  /** The empty settings' id (registry::empty_settings_revision()), from the core once. */
  _emptySettings() { return (this._emptySettingsId ??= this._core.canonicalize('{}').value.id); }

  /** A settings value by revision, re-hashed (for the host page; tool code never sees it). */
  async settingsValue(id) {
    if (id === this._emptySettings()) return {};
    const row = await done(this._os('settings').get(String(id)));
    if (!row) throw new StoreError('not_found', `no settings ${id} in the browser store`);
    const again = this._core.canonicalize(row.canonical);
    if (!again.ok || again.value.id !== row.id) throw new StoreError('tampered', `settings ${row.id} were changed in the store`);
    return JSON.parse(row.canonical);
  }

  /**
   * What tool code is shown for a settings revision (M15, the CLI's settings_identity): HMAC-SHA-256
   * keyed by a per-store key (made once, non-extractable, kept in IndexedDB) over
   * "taskyon settings identity v1\0TOOL REVISION\0SETTINGS REVISION"; stable within this store,
   * and nobody without the key can check a guess of the settings against it.
   */
  async settingsIdentity(toolRevision, settingsRevision) {
    return this._identity('taskyon settings identity v1', [toolRevision, settingsRevision]);
  }

  /**
   * The same for a task id and for a tool revision (the CLI's task_identity, revision_identity):
   * every id in a call's subtree hashes the call's settings revision and a revision is a plain
   * hash of its manifest, so tool code is shown these instead (M14, M15).
   */
  async taskIdentity(id) { return this._identity('taskyon task identity v1', [id]); }
  async revisionIdentity(revision) { return this._identity('taskyon revision identity v1', [revision]); }

  /** "hmac-sha256:" + hex HMAC-SHA-256(the store's key, label NUL part NUL …). */
  async _identity(label, parts) {
    if (!this._identityKey) {  // made once per store, never changed: read once per instance
      this._identityKey = this._loadIdentityKey();
      this._identityKey.catch(() => { this._identityKey = null; });
    }
    const message = new TextEncoder().encode([label, ...parts].join('\0'));
    const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await this._identityKey, message));
    return 'hmac-sha256:' + [...mac].map((b) => b.toString(16).padStart(2, '0')).join('');
  }

  /** The store's HMAC key (non-extractable CryptoKey), made on first use; concurrent first uses agree. */
  async _loadIdentityKey() {
    let row = await done(this._os('meta').get('settings_identity_key'));
    if (!row) {
      const key = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign']);
      try { await done(this._os('meta', 'readwrite').add({ name: 'settings_identity_key', key })); } catch { /* another call made it first */ }
      row = await done(this._os('meta').get('settings_identity_key'));
    }
    return row.key;
  }

  /**
   * The registry as the wasm core's compiler reads it (abi.h TABLE): for each ref, a tool name
   * (its active revision) or a full revision id the store holds, with the name's settings
   * revision; refs the store lacks are left out (the core answers not_found for them).
   * @param {Iterable<unknown>} refs
   */
  async registryTable(refs) {
    const table = Object.create(null);  // a tool may be named __proto__ (a valid name): no prototype to set
    for (const ref of new Set(refs)) {
      if (typeof ref !== 'string' || ref.length > 256 || Object.hasOwn(table, ref)) continue;
      const id = /^sha256:[0-9a-f]{64}$/.test(ref) ? ref : await this.active(ref);
      if (id === null) continue;
      let r;
      try { r = await this.revision(id); } catch (e) { if (e instanceof StoreError && e.code === 'not_found') continue; throw e; }
      table[ref] = { definition: r.definition, settingsRevision: await this.settingsRevision(r.definition.name) };
    }
    return table;
  }

  /**
   * Compiles a call of tool `name` (a name or a revision id) with `args` below task `parent` (or at
   * the root) with the wasm core, pinned to the revision and settings it resolves to (T1), and
   * stores it: the task SandboxHost.call's `task` names. StoreError bad_request with the core's
   * error (not_found, invalid_arguments, …). @returns {Promise<{task: any, tool: any}>}
   */
  async compileCall(name, args, { parent = null } = {}) {
    const lineage = parent === null ? [] : await this.lineage(parent);
    const registry = await this.registryTable([name, ...treeRefs(lineage)]);
    const draft = { role: 'assistant', content: { functionCall: { name, arguments: args ?? {} } } };
    const r = this._core.compile(JSON.stringify({ draft, lineage, registry }));
    if (!r.ok) throw new StoreError('bad_request', `${r.error.code}: ${r.error.message}`);
    await this.putTasks([r.value.task]);
    return r.value;
  }

  // ------------------------------------------------------------------ append-only logs

  /** Appends one capability decision: {revision, capability, target, access, verdict, reason}. */
  async audit(row) {
    const entry = { at: new Date().toISOString(), revision: String(row.revision ?? ''), capability: String(row.capability),
      target: await boundedAuditText(String(row.target ?? '')), access: row.access ?? null, verdict: row.verdict === 'allow' ? 'allow' : 'deny',
      reason: await boundedAuditText(String(row.reason ?? '')) };
    await done(this._os('audit', 'readwrite').add(entry));
  }

  /** The audit rows, oldest first (of one revision when given). */
  async auditRows(revision) {
    const rows = await done(this._os('audit').getAll());
    return revision === undefined ? rows : rows.filter((r) => r.revision === revision);
  }

  /** Appends a sandbox log entry (SandboxHost's log rows: created / destroyed with the reason). */
  async logSandbox(entry) {
    const { event, sandbox, tool, revision, session, reason, detail } = entry;
    await done(this._os('sandbox_log', 'readwrite').add({ at: new Date().toISOString(), event, sandbox, tool, revision, session, reason, detail }));
  }

  async sandboxLog() { return done(this._os('sandbox_log').getAll()); }
}

/**
 * The revision ids a lineage's tree bindings name (toolDefinition {binding: {revision}}): the
 * compiler resolves them in the registry, so its table must hold them.
 * @param {any[]} tasks
 */
export function treeRefs(tasks) {
  const out = [];
  for (const t of tasks) {
    const b = t && t.content && t.content.toolDefinition && t.content.toolDefinition.binding;
    if (b && typeof b.revision === 'string') out.push(b.revision);
  }
  return out;
}

/** What a grant prompt answers (the CLI's --ask): 'no', 'once' (this request, nothing stored) or 'always' (a grant stored). */
const ANSWERS = new Set(['no', 'once', 'always']);

/**
 * A `decide` for SandboxHost ({decide} option, policy.js) that needs, after `policy` (the wasm
 * core's, browser/core/policy.mjs) admitted a request, a grant in `store` for (revision, origin,
 * access) (M8), fills `{{secret:NAME}}` header placeholders from that revision's secrets for that
 * origin only, and audits every decision. Refusals: `denied` (no grant, or a missing secret),
 * the policy's own codes otherwise.
 *
 * `ask` (optional) is the page's grant prompt, as the CLI's `--ask`: a request the policy admits
 * but no grant covers is put to it while the tool's fetch waits (the call's timeout still runs),
 * and it answers 'always' (a grant for exactly (revision, origin, access) is stored, then the
 * request goes on), 'once' (this request goes on, nothing is stored) or 'no'. Anything else or a
 * throw is 'no'. The audit row says which ("asked: always", …). An answer given after the call
 * ended still stores its grant, but nothing is fetched (the call's requests are aborted). Only a
 * grantable request is ever asked: the policy's refusals (metadata, private addresses, a bad
 * scheme) never reach it.
 * @param {(request: any) => Promise<any>} policy @param {BrowserStore} store
 * @param {{ask?: (q: {revision: string, tool: string, origin: string, access: string}) => Promise<string>|string}} [o]
 */
export function grantedDecider(policy, store, o = {}) {
  return async (request) => {
    const revision = String(request.revision);
    const verdict = await policy(request);
    const audit = (v, reason, origin = '', access = null) =>
      store.audit({ revision, capability: 'fetch', target: origin || String(request.url), access, verdict: v, reason });
    if (!verdict || verdict.allow !== true) {
      await audit('deny', `${verdict?.code}: ${verdict?.message}`);
      return verdict;
    }
    const { origin, access } = verdict;
    // A placeholder that is not {{secret:NAME}} is refused, as the CLI's check_headers does.
    for (const [name, value] of request.headers || []) {
      if (String(value).split('{{secret:').length - 1 !== [...String(value).matchAll(PLACEHOLDER)].length) {
        const message = `header "${name}" has a malformed secret placeholder: write {{secret:NAME}}, NAME of [A-Za-z0-9_.-]{1,64}`;
        await audit('deny', message, origin, access);
        return { allow: false, code: 'invalid_request', message };
      }
    }
    let asked = '';
    if (!(await store.granted(revision, origin, access))) {
      const message = `no ${access} grant for ${origin} to revision ${revision} (M8)`;
      let answer = 'no';
      if (o.ask) {
        try { answer = String(await o.ask({ revision, tool: String(request.tool ?? ''), origin, access })); } catch { answer = 'no'; }
        if (!ANSWERS.has(answer)) answer = 'no';
      }
      if (answer === 'no') {
        await audit('deny', o.ask ? `asked: no; ${message}` : message, origin, access);
        return { allow: false, code: 'denied', message };
      }
      if (answer === 'always') await store.grant(revision, origin, access);
      asked = `asked: ${answer}`;
    }
    const headers = [];
    for (const [name, value] of request.headers || []) {
      let filled = String(value), missing = '';
      for (const m of String(value).matchAll(PLACEHOLDER)) {
        const secret = await store._secret(revision, origin, m[1]);
        if (secret === null) { missing = m[1]; break; }
        filled = filled.split(m[0]).join(secret);
      }
      if (missing) {
        const message = `no secret "${missing}" is stored for ${origin} (header "${name}")`;
        await audit('deny', message, origin, access);
        return { allow: false, code: 'denied', message };
      }
      headers.push([name, filled]);
    }
    await audit('allow', asked || 'granted', origin, access);
    return { ...verdict, headers };
  };
}

/**
 * context.storage for SandboxHost ({storage} option): each operation decided with `store`'s
 * storage grant of the calling revision (the channel's), data per tool name, quotas as the
 * CLI's, every operation audited (capability storage.get|set|delete|list, target the key or
 * prefix, access read for get/list, write for set/delete). Refusals: denied, invalid_request,
 * too_large. Answers are JSON text: get the value or null, set null, delete whether a key was
 * removed, list the keys under the prefix, sorted.
 * @param {BrowserStore} store
 */
export function storageCapability(store) {
  return async ({ op, key, json }, who) => {
    const r = await store._storageOp(op, String(key), json, who);
    await store.audit({ revision: who.revision, capability: 'storage.' + op, target: String(key),
      access: op === 'get' || op === 'list' ? 'read' : 'write', verdict: r.ok ? 'allow' : 'deny', reason: r.ok ? 'granted' : `${r.code}: ${r.message}` });
    return r;
  };
}
