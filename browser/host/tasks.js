// The tree capabilities of tool code in the browser (DESIGN §6; docs/browser.md
// "The tree capabilities"): createSubtasksResult (M14) and resolveInvocation
// (M15), decided in the host page by the wasm core's task compiler
// (abi.h compile_subtasks, resolve_invocation: the C++ rules the CLI runs,
// tasks/tool_requests.h) over the browser store's task tree and registry.
//
// * The call is the store's task SandboxHost.call was given (`task`): its
//   lineage is read back and re-hashed, and it must be pinned to the revision
//   the sandbox's channel is bound to (M3), or nothing is compiled.
// * Subtasks are compiled as children of that call, marked with it and its
//   revision (hashed), stored in the browser store as they are compiled, and
//   shown to the tool with the store's opaque identities (HMAC) in place of
//   every id and revision; resolveInvocation answers {tool, settings} the same
//   way: never a manifest, code, settings value, nor a hash of one.
// * A request is decided only while its call runs (who.live()); the sandbox
//   holds the call's result until its requests are answered, and decides the
//   tree requests of one call one at a time (the 64-subtask count).
// * Every decision is audited as the CLI audits it (capability
//   createSubtasksResult, target "N draft(s)"; resolveInvocation, target the
//   name); the detail of a refusal is the audit's, the tool sees the message.

import { treeRefs } from './store.js';

/**
 * A tool-made task as tool code sees it (the CLI's shown_to_tool): every id and revision replaced
 * by the store's opaque identity of it, since each id hashes a settings revision and a revision
 * is a plain hash of its manifest (M14, M15).
 * @param {import('./store.js').BrowserStore} store @param {any} t task JSON
 */
async function shownToTool(store, t) {
  const task = async (id) => (id === null ? null : store.taskIdentity(id));
  return { ...t, id: await task(t.id), parentId: await task(t.parentId),
    toolRevision: t.toolRevision === null ? null : await store.revisionIdentity(t.toolRevision),
    settingsRevision: t.settingsRevision === null ? null : await store.settingsIdentity(t.toolRevision, t.settingsRevision),
    createdBy: t.createdBy === null ? null : { task: await store.taskIdentity(t.createdBy.task), revision: await store.revisionIdentity(t.createdBy.revision) } };
}

/**
 * `tasks` for SandboxHost: (request, who) -> {ok: true, json, created} | {ok: false, code, message}.
 * request: {op: 'createSubtasksResult'|'resolveInvocation', json: the tool's request as JSON text};
 * who: {revision, tool, task: the call's task id or null, already: subtasks this call made before,
 * live: () => whether the call still runs}.
 * @param {import('./store.js').BrowserStore} store
 * @param {{compileSubtasks: (text: string) => any, resolveInvocation: (text: string) => any}} core the wasm core
 */
export function taskCapability(store, core) {
  return async ({ op, json }, who) => {
    let request;
    try { request = JSON.parse(json); } catch { return { ok: false, code: 'invalid_request', message: `${op}: the request is not JSON` }; }
    const target = op === 'createSubtasksResult'
      ? (request && Array.isArray(request.drafts) ? `${request.drafts.length} draft(s)` : '')
      : (request && typeof request.name === 'string' ? request.name : '');
    const audit = (verdict, reason) => (target ? store.audit({ revision: who.revision, capability: op, target, access: null, verdict, reason }) : Promise.resolve());
    const refuse = async (code, message, detail = message) => { await audit('deny', detail); return { ok: false, code, message }; };

    if (typeof who.task !== 'string') return refuse('denied', `${op} needs the call's task in the store (SandboxHost.call's task: store.compileCall)`);
    let lineage;
    // What the tool reads never holds an id (each hashes a settings revision); the audit row does.
    try { lineage = await store.lineage(who.task); } catch (e) { return refuse('denied', `${op}: the host cannot read this call's task`, `the call's task cannot be read: ${e && e.message}`); }
    const call = lineage[lineage.length - 1];
    if (call.toolRevision !== who.revision) {  // M3: the channel's revision, never a task the page mixed up
      return refuse('denied', `${op}: the task the page gave this call is not a call of its revision`,
        `task ${call.id} is not a call of revision ${who.revision} (it is pinned to ${call.toolRevision})`);
    }
    const refs = [...treeRefs(lineage)];
    if (op === 'createSubtasksResult') {
      for (const d of request && Array.isArray(request.drafts) ? request.drafts.slice(0, 64) : []) {
        const c = d && d.content;
        if (c && c.functionCall) refs.push(c.functionCall.name);  // bindings in tool-made drafts are refused by the core
      }
    } else if (request) {
      refs.push(request.name);
    }
    const input = JSON.stringify({ request, lineage, registry: await store.registryTable(refs), already: who.already });
    const answer = op === 'createSubtasksResult' ? core.compileSubtasks(input) : core.resolveInvocation(input);
    if (!answer.ok) return refuse('denied', `${op}: the host could not decide it`, `the core refused the input: ${answer.error.code}: ${answer.error.message}`);
    const v = answer.value;
    if (v.refused) return refuse(v.refused.code, v.refused.message, v.refused.detail);
    if (!who.live()) return refuse('call_ended', `the call ended before its ${op} was decided`);
    if (op === 'resolveInvocation') {
      const shownTool = { tool: await store.revisionIdentity(v.tool), settings: await store.settingsIdentity(v.tool, v.settingsRevision) };
      await audit('allow', `resolved to ${v.tool}`);
      return { ok: true, json: JSON.stringify(shownTool), created: 0 };
    }
    await store.putTasks(v.tasks);
    const shown = [];
    for (const t of v.tasks) shown.push(await shownToTool(store, t));
    await audit('allow', `compiled as children of ${call.id}`);
    return { ok: true, json: JSON.stringify(shown), created: v.tasks.length };
  };
}
