// The browser store (browser/host/store.js) in real Chromium: grants per
// (revision, origin, access) decided in the page (M8), secrets filled host-side
// for the granted origin only (M17), revisions re-hashed on read (R2), records
// that outlive a reload, tool storage behind a storage grant (S7). The canary is the target: with an allow-all inner
// policy and the address space omitted (test mode, as the M9-M12 checks do),
// only the store's grant stands between tool code and the request.
import fs from 'node:fs';
import { CORE_WASM } from './servers.mjs';

const FETCH = `async ({u, method = 'GET', headers = {}}) => {
  try { const r = await fetch(u, {method, headers}); return 'fetched ' + r.status; }
  catch (e) { return e.name + ':' + e.code; } }`;

/** @param {{expect: Function, canaryLog: object[], Skip: typeof Error, call: Function}} h */
export function storeChecks({ expect, canaryLog, Skip, call }) {
  // window.store (a fresh IndexedDB store of this check's own browser context) and window.h, whose
  // decide is grantedDecider(allow-all, store); the revision of a `fetcher` definition stored there.
  async function storeHost(page) {
    if (!fs.existsSync(CORE_WASM)) throw new Skip(`${CORE_WASM} is not built (make wasm; make test builds it before ctest)`);
    const r = await page.evaluate(async (code) => {
      const t = /** @type {any} */ (window).taskyon;
      const loaded = await t.loadCore('/build-wasm/taskyon_core.wasm');
      if (!loaded.ok) return loaded;
      window.store = await t.store.BrowserStore.open('checks', { core: loaded.core });
      const allowAll = async (req) => ({ allow: true, origin: new URL(req.url).origin,
        access: ['GET', 'HEAD'].includes(String(req.method).toUpperCase()) ? 'read' : 'write' });
      if (window.h) window.h.close();
      window.h = new t.SandboxHost({ decide: t.store.grantedDecider(allowAll, window.store), storage: t.store.storageCapability(window.store),
        testing: { omitAddressSpace: true } });
      const def = { name: 'fetcher', description: 'store check', parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code };
      const other = { ...def, description: 'another revision' };
      return { ok: true, rev: (await window.store.install(def)).revision, other: (await window.store.install(other, { activate: false })).revision };
    }, FETCH);
    if (!r.ok) { if (r.absent) throw new Skip(r.reason); throw new Error(r.reason); }
    return r;
  }
  const fetchAs = (page, rev, args) => call(page, { tool: 'fetcher', revision: rev, code: FETCH, args });
  const gets = (path) => canaryLog.filter((e) => e.method !== 'OPTIONS' && e.url.startsWith(path));

  return [
    ['B5', 'popup_decisions_audited', 'a popup host given the store\'s audit appends every decision, refused or opened, as a popup row of the revision', async (env) => {
      const { page } = env;
      await storeHost(page);
      const trusted = 'sha256:' + 'cd'.repeat(32);
      const [popup, verdicts] = await Promise.all([page.context().waitForEvent('page', { timeout: 5000 }), page.evaluate(async (rev) => {
        const { PopupHost, PopupPermissions } = /** @type {any} */ (window).taskyon.popup;
        const perms = new PopupPermissions();
        perms.grant(rev, 'custom-html');
        const ph = new PopupHost({ permissions: perms, trusted: [rev], audit: (row) => window.store.audit(row) });
        const out = [ph.open({ tool: 'viewer', revision: 'sha256:untrusted', html: '<p>x</p>' }),
          ph.open({ tool: 'viewer', revision: rev, url: 'https://popup.example.test/page' }),
          ph.open({ tool: 'viewer', revision: rev, url: 'http://plain.example/' }),
          ph.open({ tool: 'viewer', revision: rev, html: '<p>audited</p>' })];  // evaluate runs as a user gesture
        await new Promise((r) => setTimeout(r, 200));
        return { out: out.map((r) => r.ok ? 'opened' : r.code), errors: ph.auditErrors };
      }, trusted)]);
      await popup.close();
      expect(verdicts.out.join() === 'not_trusted,no_permission,bad_target,opened', 'decisions ' + JSON.stringify(verdicts));
      expect(verdicts.errors.length === 0, 'audit errors ' + JSON.stringify(verdicts.errors));
      const rows = await page.evaluate((r) => window.store.auditRows(r), trusted);
      const seen = rows.map((x) => `${x.capability}:${x.verdict}:${x.reason}`).join();
      expect(seen === 'popup:deny:no_permission,popup:deny:bad_target,popup:allow:opened', 'audit rows ' + seen);
      const untrusted = await page.evaluate(() => window.store.auditRows('sha256:untrusted'));
      expect(untrusted.length === 1 && untrusted[0].reason === 'not_trusted', 'the untrusted revision\'s row ' + JSON.stringify(untrusted));
      return `decisions ${verdicts.out.join(', ')}; audit rows ${seen}, and not_trusted under the untrusted revision`;
    }],

    ['M8', 'page_grant_per_revision_origin_access', 'in the page, a mediated fetch needs a store grant for (revision, origin, access): none, another revision\'s, or a read grant for a write is denied and reaches nothing; each decision is audited', async (env) => {
      const { page } = env;
      const { rev, other } = await storeHost(page);
      const origin = env.canary;
      canaryLog.length = 0;
      const before = await fetchAs(page, rev, { u: origin + '/m/grant?before' });
      await page.evaluate(([o, r]) => window.store.grant(r, o, 'read'), [origin, other]);
      const otherRev = await fetchAs(page, rev, { u: origin + '/m/grant?other-revision' });
      await page.evaluate(([o, r]) => window.store.grant(r, o, 'read'), [origin, rev]);
      const granted = await fetchAs(page, rev, { u: origin + '/m/grant?granted' });
      const write = await fetchAs(page, rev, { u: origin + '/m/grant?write', method: 'POST' });
      const got = [before, otherRev, granted, write].map((r) => r.ok ? r.value : 'call failed: ' + JSON.stringify(r.error));
      expect(got.join() === 'CapabilityError:denied,CapabilityError:denied,fetched 200,CapabilityError:denied', 'answers ' + got.join());
      const seen = gets('/m/grant').map((e) => e.url);
      expect(seen.length === 1 && seen[0] === '/m/grant?granted', 'the canary saw ' + JSON.stringify(seen));
      const rows = await page.evaluate((r) => window.store.auditRows(r), rev);
      expect(rows.map((x) => x.verdict).join() === 'deny,deny,allow,deny' && rows.every((x) => x.capability === 'fetch'),
        'audit ' + JSON.stringify(rows));
      expect(rows[3].access === 'write' && /no write grant/.test(rows[3].reason), 'the write refusal row ' + JSON.stringify(rows[3]));
      return `${got.join(', ')}; canary saw only the granted GET; audit deny, deny, allow, deny`;
    }],

    ['M8', 'page_grant_prompt_while_the_fetch_waits', 'a page grant prompt (grantedDecider\'s ask, the CLI\'s --ask) is asked only for a request no grant covers, while the tool\'s fetch waits: once allows that request and stores nothing, always stores the grant for exactly (revision, origin, access), no or a failing prompt denies and nothing is sent; each answer is in the audit', async (env) => {
      const { page } = env;
      const { rev } = await storeHost(page);
      const origin = env.canary;
      canaryLog.length = 0;
      await page.evaluate(() => {
        const t = /** @type {any} */ (window).taskyon;
        const allowAll = async (req) => ({ allow: true, origin: new URL(req.url).origin,
          access: ['GET', 'HEAD'].includes(String(req.method).toUpperCase()) ? 'read' : 'write' });
        window.questions = [];
        window.answers = [];
        const ask = async (q) => {
          window.questions.push(q);
          await new Promise((r) => setTimeout(r, 150));  // the user takes a moment: the fetch waits
          const a = window.answers.shift();
          if (a === 'throw') throw new Error('the prompt failed');
          return a;
        };
        window.h.close();
        window.h = new t.SandboxHost({ decide: t.store.grantedDecider(allowAll, window.store, { ask }), testing: { omitAddressSpace: true } });
      });
      const got = [];
      for (const answer of ['once', 'no', 'throw', 'maybe', 'always', null]) {
        await page.evaluate((a) => { if (a !== null) window.answers.push(a); }, answer);
        const r = await fetchAs(page, rev, { u: origin + '/m/ask?' + answer });
        got.push(r.ok ? r.value : 'call failed: ' + JSON.stringify(r.error));
      }
      expect(got.join() === 'fetched 200,CapabilityError:denied,CapabilityError:denied,CapabilityError:denied,fetched 200,fetched 200', 'answers ' + got.join());
      const q = await page.evaluate(() => window.questions);
      expect(q.length === 5 && q.every((x) => x.revision === rev && x.origin === origin && x.access === 'read' && x.tool === 'fetcher'),
        'asked ' + JSON.stringify(q));  // the sixth request was granted: not asked
      const seen = gets('/m/ask').map((e) => e.url);
      expect(seen.join() === '/m/ask?once,/m/ask?always,/m/ask?null', 'the canary saw ' + JSON.stringify(seen));
      const stored = await page.evaluate(async ([o, r]) => [await window.store.granted(r, o, 'read'), (await window.store.grants()).length], [origin, rev]);
      expect(stored[0] === true && stored[1] === 1, 'grants after the prompts ' + JSON.stringify(stored));
      const rows = (await page.evaluate((r) => window.store.auditRows(r), rev)).map((x) => `${x.verdict}:${x.reason.split(';')[0]}`);
      expect(rows.join() === 'allow:asked: once,deny:asked: no,deny:asked: no,deny:asked: no,allow:asked: always,allow:granted', 'audit ' + rows.join());
      return `once, no, a failing prompt, a bad answer, always, then no question: ${got.join(', ')}; one grant stored; audit ${rows.join(', ')}`;
    }],

    ['M17', 'page_secrets_filled_host_side', 'a {{secret:NAME}} header placeholder is filled by the page from the store only for the granted origin; without the secret the request is denied and sent nowhere; tool code never holds the value', async (env) => {
      const { page } = env;
      const { rev, other } = await storeHost(page);
      const origin = env.canary;
      await page.evaluate(([o, r]) => window.store.grant(r, o, 'read'), [origin, rev]);
      canaryLog.length = 0;
      const missing = await fetchAs(page, rev, { u: origin + '/m/secret?missing', headers: { 'x-token': 'Bearer {{secret:TOKEN}}' } });
      await page.evaluate(([o, r]) => window.store.setSecret(r, o, 'TOKEN', 's3cret-value'), [origin, rev]);
      const filled = await fetchAs(page, rev, { u: origin + '/m/secret?filled', headers: { 'x-token': 'Bearer {{secret:TOKEN}}' } });
      expect(missing.ok && missing.value === 'CapabilityError:denied', 'without the secret: ' + JSON.stringify(missing.value ?? missing.error));
      expect(filled.ok && filled.value === 'fetched 200', 'with the secret: ' + JSON.stringify(filled.value ?? filled.error));
      const seen = gets('/m/secret');
      expect(seen.length === 1 && seen[0].url === '/m/secret?filled' && seen[0].token === 'Bearer s3cret-value', 'the canary saw ' + JSON.stringify(seen));
      // Tool code reads back what it can: a request it builds holds the placeholder, not the value
      // (another revision: a revision's sandbox keeps the code it loaded first).
      const peek = await call(page, { tool: 'fetcher', revision: other, code: `async () => { const r = new Request('${origin}/x', {headers: {'x-token': '{{secret:TOKEN}}'}}); return r.headers.get('x-token'); }`, args: {} });
      expect(peek.ok && peek.value === '{{secret:TOKEN}}', 'the tool\'s request holds ' + JSON.stringify(peek.value ?? peek.error));
      const malformed = await fetchAs(page, rev, { u: origin + '/m/secret?malformed', headers: { 'x-token': 'Bearer {{secret:TOK EN}}' } });
      expect(malformed.ok && malformed.value === 'CapabilityError:invalid_request', 'a malformed placeholder: ' + JSON.stringify(malformed.value ?? malformed.error));
      expect(gets('/m/secret?malformed').length === 0, 'a malformed placeholder reached the canary');
      const names = await page.evaluate(() => window.store.secretNames());
      expect(JSON.stringify(names).indexOf('s3cret') < 0, 'secretNames shows a value: ' + JSON.stringify(names));
      return 'without the secret: denied, canary 0; with it: the canary got the filled header; the tool and secretNames() never see the value';
    }],

    ['R2', 'page_store_rehashes_revisions', 'a revision row changed in IndexedDB is refused on read (tampered), and so is activating it; an intact one reads back with the wasm core\'s id', async (env) => {
      const { page } = env;
      const { rev } = await storeHost(page);
      const r = await page.evaluate(async (rev) => {
        const intact = (await window.store.revision(rev)).id;
        await new Promise((resolve, reject) => {
          const open = indexedDB.open('checks');
          open.onsuccess = () => {
            const os = open.result.transaction('revisions', 'readwrite').objectStore('revisions');
            const get = os.get(rev);
            get.onsuccess = () => {
              const row = get.result;
              row.definition = row.definition.replace('store check', 'store check!');
              const put = os.put(row);
              put.onsuccess = () => { open.result.close(); resolve(null); };
              put.onerror = reject;
            };
          };
          open.onerror = reject;
        });
        const codes = [];
        for (const f of [() => window.store.revision(rev), () => window.store.activate('fetcher', rev)]) {
          try { await f(); codes.push('read'); } catch (e) { codes.push(e.code); }
        }
        return { intact, codes };
      }, rev);
      expect(r.intact === rev, 'the intact revision read back as ' + r.intact);
      expect(r.codes.join() === 'tampered,tampered', 'after the change: ' + r.codes.join());
      return `intact ${rev.slice(0, 15)}…; after one changed character: ${r.codes.join(', ')}`;
    }],

    ['S7', 'page_storage_behind_a_storage_grant', 'context.storage in the browser: denied without the calling revision\'s storage grant; with it get/set/delete/list work on the tool name\'s data, which another revision of the tool reaches only with its own grant; quotas refuse; each operation audited', async (env) => {
      const { page } = env;
      const { rev, other } = await storeHost(page);
      const STORE = `async ({ops}, context) => { const out = []; for (const [op, ...a] of ops) {
        try { out.push(JSON.stringify(await context.storage[op](...a))); } catch (e) { out.push(e.name + ':' + e.code); } } return out.join(' '); }`;
      const run = (revision, ops) => call(page, { tool: 'fetcher', revision, code: STORE, args: { ops }, disposable: true });
      const before = await run(rev, [['set', 'k', { a: 1 }]]);
      await page.evaluate((r) => window.store.grantStorage(r), rev);
      const granted = await run(rev, [['set', 'k', { b: [1, 2], a: 1 }], ['get', 'k'], ['list', ''], ['set', 'k'.repeat(300), 1], ['delete', 'nothing'],
        ['get', 'k'.repeat(2000)]]);
      const otherBefore = await run(other, [['get', 'k']]);
      await page.evaluate((r) => window.store.grantStorage(r), other);
      const otherAfter = await run(other, [['get', 'k'], ['delete', 'k'], ['get', 'k']]);
      const got = [before, granted, otherBefore, otherAfter].map((r) => r.ok ? r.value : 'call failed: ' + JSON.stringify(r.error));
      expect(got[0] === 'CapabilityError:denied', 'without a grant: ' + got[0]);
      // A key past the message limit is refused in the worker (invalid_request), and the sandbox lives on.
      expect(got[1] === 'null {"a":1,"b":[1,2]} ["k"] CapabilityError:invalid_request false CapabilityError:invalid_request', 'with the grant: ' + got[1]);
      expect(got[2] === 'CapabilityError:denied' && got[3] === '{"a":1,"b":[1,2]} true null', 'the other revision: ' + got[2] + ' / ' + got[3]);
      const rows = await page.evaluate(() => window.store.auditRows());
      const storageRows = rows.filter((x) => x.capability.startsWith('storage.'));
      expect(storageRows.length === 10 && storageRows[0].verdict === 'deny' && storageRows[1].capability === 'storage.set' &&
        storageRows[1].access === 'write' && storageRows[2].access === 'read', 'audit ' + JSON.stringify(storageRows));
      return `no grant: denied; granted: ${got[1]}; another revision: denied, then with its own grant ${got[3]}; 10 audit rows`;
    }],

    ['M8', 'page_store_survives_a_reload', 'grants, bindings, popup permissions and the audit are in IndexedDB: a reloaded page sees them', async (env) => {
      const { page } = env;
      const { rev } = await storeHost(page);
      await page.evaluate(async ([o, r]) => {
        await window.store.grant(r, o, 'read');
        await window.store.audit({ revision: r, capability: 'fetch', target: o, access: 'read', verdict: 'allow', reason: 'before the reload' });
        const perms = await window.store.popupPermissions();
        perms.grant(r, 'custom-html');
        await perms.saved;
      }, [env.canary, rev]);
      await page.reload();
      await page.waitForFunction(() => window.taskyonReady === true);
      await storeHost(page);
      const after = await page.evaluate(async ([o, r]) => ({
        granted: await window.store.granted(r, o, 'read'),
        active: await window.store.active('fetcher'),
        popup: (await window.store.popupPermissions()).has(r, 'custom-html'),
        audit: (await window.store.auditRows(r)).map((x) => x.reason),
      }), [env.canary, rev]);
      expect(after.granted && after.active === rev && after.popup && after.audit.includes('before the reload'), 'after the reload ' + JSON.stringify(after));
      return 'after a reload: the grant, the binding, the popup permission and the audit row are there';
    }],
  ];
}
