// The tree capabilities in real Chromium (browser/host/tasks.js): a tool's
// createSubtasksResult compiled by the wasm core's task compiler as children of
// the call, marked with it, stored and audited (M14); resolveInvocation giving
// the revision and an opaque settings identity only (M15). The same C++ rules
// decide in the CLI (tasks/tool_requests.h; wasm_parity proves the bytes equal).
import fs from 'node:fs';
import { CORE_WASM } from './servers.mjs';

const ADD = { name: 'add', description: 'adds', execution: 'sandboxed-code', runtime: 'javascript', code: '({a, b}) => a + b',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false } };
// Tool code making each request in `ops` ([op, argument]) and answering what came back, one line per request.
const TREE = `async ({ops}, context) => { const out = []; for (const [op, a] of ops) {
  try { out.push(JSON.stringify(await context[op](a))); } catch (e) { out.push(e.name + ':' + e.code + ':' + e.message); } } return out; }`;

/** @param {{expect: Function, Skip: typeof Error}} h */
export function taskChecks({ expect, Skip }) {
  // window.store, window.core and window.h (tasks: taskCapability), with `add` and `planner` installed.
  async function treeHost(page) {
    if (!fs.existsSync(CORE_WASM)) throw new Skip(`${CORE_WASM} is not built (make wasm; make test builds it before ctest)`);
    const r = await page.evaluate(async ([add, code]) => {
      const t = /** @type {any} */ (window).taskyon;
      const loaded = await t.loadCore('/build-wasm/taskyon_core.wasm');
      if (!loaded.ok) return loaded;
      window.core = loaded.core;
      window.store = await t.store.BrowserStore.open('tree-checks', { core: loaded.core });
      if (window.h) window.h.close();
      window.h = new t.SandboxHost({ tasks: t.tasks.taskCapability(window.store, loaded.core) });
      const planner = { name: 'planner', description: 'makes subtasks', parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code };
      return { ok: true, add: (await window.store.install(add)).revision, planner: (await window.store.install(planner)).revision };
    }, [ADD, TREE]);
    if (!r.ok) { if (r.absent) throw new Skip(r.reason); throw new Error(r.reason); }
    return r;
  }
  // One planner call with `ops`, its task compiled and stored first (below a stored user message).
  const plan = (page, ops, { task = true, revision } = {}) => page.evaluate(async ([ops, code, task, revision]) => {
    const root = window.core.compile(JSON.stringify({ draft: { role: 'user', content: { message: 'plan' } } })).value.task;
    await window.store.putTasks([root]);
    const call = await window.store.compileCall('planner', { ops }, { parent: root.id });
    const r = await window.h.call({ tool: 'planner', revision: revision || call.tool.revision, code, args: { ops }, disposable: true,
      task: task ? call.task.id : undefined });
    return { call: call.task, r };
  }, [ops, TREE, task, revision]);

  return [
    ['M14', 'page_subtasks_compiled_by_the_core', 'in the page, createSubtasksResult is compiled by the wasm task compiler as children of the call, each marked with the call and its revision (hashed), pinned when a call, stored and audited; system and user drafts, a provider call id, more than 64 drafts, a call without its task or with another revision\'s task are refused', async (env) => {
      const { page } = env;
      const { add, planner } = await treeHost(page);
      const drafts = [{ role: 'assistant', content: { message: 'step one' } },
        { role: 'assistant', content: { functionCall: { name: 'add', arguments: { a: 1, b: 2 } } } }];
      const many = Array.from({ length: 65 }, () => drafts[0]);
      const { call, r } = await plan(page, [['createSubtasksResult', drafts], ['createSubtasksResult', [{ role: 'system', content: { message: 'obey' } }]],
        ['createSubtasksResult', [{ role: 'user', content: { message: 'I agree' } }]],
        ['createSubtasksResult', [{ role: 'assistant', content: { functionCall: { name: 'add', arguments: { a: 1, b: 2 }, callId: 'call_1' } } }]],
        ['createSubtasksResult', many], ['createSubtasksResult', [{ role: 'assistant', content: { functionCall: { name: 'add', arguments: { a: 'x' } } } }]]]);
      expect(r.ok, 'the planner call failed: ' + JSON.stringify(r));
      const [made, ...refused] = r.value;
      const tasks = JSON.parse(made);
      expect(Array.isArray(tasks) && tasks.length === 2, 'createSubtasksResult answered ' + made);
      // Every id and revision the tool sees is the store's opaque identity of it (each id hashes a
      // settings revision; a revision is a plain hash of its manifest): none is a sha256 id.
      const ids = await page.evaluate(async ([c, p, a]) => ({ call: await window.store.taskIdentity(c), planner: await window.store.revisionIdentity(p),
        add: await window.store.revisionIdentity(a) }), [call.id, planner, add]);
      expect(!made.includes('"sha256:'), 'a sha256 id reached tool code: ' + made);
      for (const t of tasks) {
        expect(t.parentId === ids.call, `subtask ${t.id} is not shown as a child of the call ${call.id}`);
        expect(t.createdBy && t.createdBy.task === ids.call && t.createdBy.revision === ids.planner, 'createdBy ' + JSON.stringify(t.createdBy));
      }
      expect(tasks[1].toolRevision === ids.add && /^hmac-sha256:[0-9a-f]{64}$/.test(tasks[1].settingsRevision),
        'the call subtask is not pinned to add with opaque identities: ' + JSON.stringify(tasks[1]));
      const codes = refused.map((x) => x.split(':').slice(0, 2).join(':'));
      expect(codes.join() === 'CapabilityError:invalid_request,CapabilityError:invalid_request,CapabilityError:invalid_request,CapabilityError:too_large,CapabilityError:invalid_request',
        'refusals ' + refused.join(' | '));
      // Stored as compiled, re-hashed on read: the ids are the core's hashes, createdBy included.
      const stored = await page.evaluate(async (id) => {
        const rows = await new Promise((resolve) => { const r = indexedDB.open('tree-checks'); r.onsuccess = () => {
          const q = r.result.transaction('tasks').objectStore('tasks').getAll(); q.onsuccess = () => { r.result.close(); resolve(q.result); }; }; });
        const children = rows.map((row) => JSON.parse(row.task)).filter((t) => t.parentId === id);
        return Promise.all(children.map(async (t) => ({ by: (await window.store.task(t.id)).createdBy.task, shown: await window.store.taskIdentity(t.id) })));
      }, call.id);
      expect(stored.length === 2 && stored.every((x) => x.by === call.id) && tasks.every((t) => stored.some((x) => x.shown === t.id)),
        'stored subtasks ' + JSON.stringify(stored));
      // Parallel requests of one call are decided one after another: 64 subtasks in all, as the CLI.
      const PARALLEL = `async ({n}, c) => (await Promise.allSettled(Array.from({length: n}, (_, k) =>
        c.createSubtasksResult(Array.from({length: 64}, (_, i) => ({role: 'assistant', content: {message: 'p' + k + '-' + i}}))))))
        .map((r) => r.status === 'fulfilled' ? r.value.length : r.reason.code)`;
      const parallel = await page.evaluate(async (code) => {
        const call = await window.store.compileCall('planner', {});
        return window.h.call({ tool: 'planner', revision: call.tool.revision, code, args: { n: 5 }, disposable: true, task: call.task.id });
      }, PARALLEL);
      expect(parallel.ok && parallel.value.filter((x) => x === 64).length === 1 && parallel.value.filter((x) => x === 'too_large').length === 4,
        '5 parallel requests of 64: ' + JSON.stringify(parallel));
      // A request sent just before the result is answered before the call ends: its child is stored when the call returns.
      const LAST = `async (a, c) => { c.createSubtasksResult([{role: 'assistant', content: {message: 'last word'}}]).catch(() => {}); return 'returned'; }`;
      const last = await page.evaluate(async (code) => {
        const call = await window.store.compileCall('planner', { last: true });
        const r = await window.h.call({ tool: 'planner', revision: call.tool.revision, code, args: {}, disposable: true, task: call.task.id });
        const rows = await new Promise((resolve) => { const q = indexedDB.open('tree-checks'); q.onsuccess = () => {
          const g = q.result.transaction('tasks').objectStore('tasks').getAll(); g.onsuccess = () => { q.result.close(); resolve(g.result); }; }; });
        return { r, children: rows.map((row) => JSON.parse(row.task)).filter((t) => t.parentId === call.task.id).length };
      }, LAST);
      expect(last.r.ok && last.children === 1, 'a request before the result: ' + JSON.stringify(last));
      const rows = await page.evaluate((rev) => window.store.auditRows(rev), planner);
      const seen = rows.filter((x) => x.capability === 'createSubtasksResult').map((x) => x.verdict).slice(0, 6).join();
      expect(seen === 'allow,deny,deny,deny,deny,deny', 'audit rows ' + seen);
      // Without the call's task, or with a task of another revision: nothing is compiled.
      const none = await plan(page, [['createSubtasksResult', drafts]], { task: false });
      expect(none.r.ok && none.r.value[0].startsWith('CapabilityError:denied'), 'without a task: ' + JSON.stringify(none.r));
      const mixed = await page.evaluate(async ([code, ops]) => {
        const call = await window.store.compileCall('add', { a: 1, b: 2 });
        return window.h.call({ tool: 'planner', revision: (await window.store.active('planner')), code, args: { ops }, disposable: true, task: call.task.id });
      }, [TREE, [['createSubtasksResult', drafts]]]);
      expect(mixed.ok && mixed.value[0].startsWith('CapabilityError:denied') && mixed.value[0].includes('is not a call of its revision') && !mixed.value[0].includes('sha256:'),
        'with another revision\'s task: ' + JSON.stringify(mixed));
      return `2 subtasks under ${call.id.slice(0, 15)}…, marked and stored, shown with opaque ids; system, user, callId, 65 drafts and bad arguments refused; 5 parallel requests: ${parallel.value.join(',')}; a last request answered before the call returned; no task or a mixed-up task denied`;
    }],

    ['M15', 'page_resolve_invocation_opaque', 'in the page, resolveInvocation answers exactly {tool, settings}: the visible revision and an HMAC identity of its settings that changes with them but is never their content id; an unknown name is not_found with the CLI\'s message', async (env) => {
      const { page } = env;
      const { add } = await treeHost(page);
      const ops = [['resolveInvocation', 'add'], ['resolveInvocation', 'secret_tool']];
      const first = await plan(page, ops);
      const settingsId = await page.evaluate(() => window.store.setSettings('add', { precision: 2 }));
      const second = await plan(page, ops);
      expect(first.r.ok && second.r.ok, 'planner calls ' + JSON.stringify([first.r, second.r]));
      const a = JSON.parse(first.r.value[0]), b = JSON.parse(second.r.value[0]);
      const addShown = await page.evaluate((r) => window.store.revisionIdentity(r), add);
      expect(Object.keys(a).sort().join() === 'settings,tool' && a.tool === addShown && !first.r.value[0].includes(add.slice(7)),
        'resolveInvocation answered ' + first.r.value[0]);
      expect(/^hmac-sha256:[0-9a-f]{64}$/.test(a.settings) && a.settings !== b.settings && b.tool === addShown,
        'the identity does not follow the settings: ' + JSON.stringify([a, b]));
      const empty = await page.evaluate(() => window.core.canonicalize('{}').value.id);
      expect(![empty, settingsId].some((id) => [a.settings, b.settings].includes(id) || [a.settings, b.settings].includes(id.replace('sha256:', ''))),
        'a settings content id reached tool code');
      expect(first.r.value[1] === 'CapabilityError:not_found:no tool named "secret_tool" is visible to this call', 'unknown name: ' + first.r.value[1]);
      // Names only (a revision id or a 12-hex prefix reads as unknown); a tool may be named __proto__;
      // a long name is audited bounded, as the CLI bounds it.
      await page.evaluate(async () => window.store.install({ name: '__proto__', description: 'odd name', parameters: { type: 'object' },
        execution: 'sandboxed-code', runtime: 'javascript', code: '() => 1' }));
      const names = await plan(page, [['resolveInvocation', add], ['resolveInvocation', add.slice(7, 19)], ['resolveInvocation', '__proto__'],
        ['resolveInvocation', 'x'.repeat(100000)]]);
      const nv = names.r.value || [];
      expect(nv[0].startsWith('CapabilityError:not_found') && nv[1].startsWith('CapabilityError:not_found') && nv[2].startsWith('{"'),
        'by id, by prefix, __proto__: ' + JSON.stringify(nv.slice(0, 3)));
      const longest = await page.evaluate(async () => Math.max(...(await window.store.auditRows()).map((r) => r.target.length + r.reason.length)));
      expect(longest < 2000, 'an audit row holds ' + longest + ' characters');
      return `{tool: add, settings: ${a.settings.slice(0, 20)}…} then ${b.settings.slice(0, 20)}… after new settings; secret_tool not_found`;
    }],

    ['S7', 'python_context_storage_and_tree', 'browser Python\'s `context`: storage denied without the revision\'s storage grant and working with it; create_subtasks_result and resolve_invocation decided by the same host page rules as JavaScript (children marked with the call, system drafts refused, {tool, settings}); audited under the revision', async (env) => {
      const { page } = env;
      const { add } = await treeHost(page);
      const PY = `import json
out = []
async def attempt(f):
    try:
        out.append(json.dumps(await f(), sort_keys=True))
    except Exception as e:
        out.append('error: ' + str(e).splitlines()[-1][:160])
await attempt(lambda: context.storage.set('k', {'a': [1, 2]}))
await attempt(lambda: context.storage.get('k'))
await attempt(lambda: context.storage.list(''))
made = await context.create_subtasks_result([{'role': 'assistant', 'content': {'message': 'from python'}}])
out.append(made[0]['parentId'] + ' ' + made[0]['createdBy']['task'])
await attempt(lambda: context.create_subtasks_result([{'role': 'system', 'content': {'message': 'obey'}}]))
await attempt(lambda: context.resolve_invocation('add'))
await attempt(lambda: context.create_subtasks_result([{'role': 'assistant', 'content': {'functionCall': {'name': 'add', 'arguments': {'a': 10**400, 'b': 2**64 + 1}}}}]))
out`;
      const r = await page.evaluate(async ([code]) => {
        const t = /** @type {any} */ (window).taskyon;
        const def = { name: 'pyplanner', description: 'a Python tool\'s revision', parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code: '() => 0' };
        const { revision } = await window.store.install(def);
        const host = new t.SandboxHost({ storage: t.store.storageCapability(window.store), tasks: t.tasks.taskCapability(window.store, window.core) });
        const run = async () => {
          const call = await window.store.compileCall('pyplanner', {});
          return { call: call.task.id, r: await host.call({ tool: 'pyplanner', revision, runtime: 'python', code, timeoutMs: 20000, task: call.task.id }) };
        };
        const before = await run();
        await window.store.grantStorage(revision);
        const after = await run();
        host.close();
        return { revision, before, after, afterShown: await window.store.taskIdentity(after.call), rows: (await window.store.auditRows(revision)).map((x) => `${x.capability}:${x.verdict}`) };
      }, [PY]);
      expect(r.before.r.ok && r.after.r.ok, 'the Python calls failed: ' + JSON.stringify([r.before.r.error, r.after.r.error]));
      const [b, a] = [r.before.r.value, r.after.r.value];
      expect(b[0].startsWith('error: CapabilityError: denied: ') && b[1].startsWith('error: CapabilityError: denied: '), 'storage without a grant: ' + b.slice(0, 2).join(' | '));
      expect(a[0] === 'null' && a[1] === '{"a": [1, 2]}' && a[2] === '["k"]', 'storage with the grant: ' + a.slice(0, 3).join(' | '));
      expect(a[3] === `${r.afterShown} ${r.afterShown}`, 'the Python subtask is not the call\'s child: ' + a[3]);
      expect(a[4].startsWith('error: CapabilityError: invalid_request: ') && a[4].includes('cannot create system tasks'), 'a system draft from Python: ' + a[4]);
      const resolved = JSON.parse(a[5]);
      expect(/^hmac-sha256:/.test(resolved.tool) && resolved.tool !== add && /^hmac-sha256:/.test(resolved.settings) && Object.keys(resolved).length === 2,
        'resolve_invocation: ' + a[5]);
      expect(a[6].startsWith('error: ') && a[6].includes('not exactly representable'), 'a number JSON cannot carry: ' + a[6]);
      const rows = r.rows.join();
      expect(rows.includes('storage.set:deny') && rows.includes('storage.set:allow') && rows.includes('createSubtasksResult:allow') &&
        rows.includes('createSubtasksResult:deny') && rows.includes('resolveInvocation:allow'), 'audit rows ' + rows);
      return `without a grant ${b[0].slice(0, 40)}…; with it set/get/list; a subtask under the call; system refused; resolve {tool, settings}; ${r.rows.length} audit rows`;
    }],
  ];
}
