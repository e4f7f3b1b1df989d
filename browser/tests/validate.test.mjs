// validateMessage (browser/host/validate.js) on every message type and the
// ways each can be wrong: run by `node --test` (ctest browser_validate). The
// Chromium checks (run.mjs, B3) show that a refusal destroys the sandbox; this
// shows which messages are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateMessage, LIMITS } from '../host/validate.js';

const busy = { state: 'busy', callId: 7 };
const starting = { state: 'starting', callId: null };
const ok = (d, expect = busy, ports = 0) => assert.equal(validateMessage(d, ports, expect).ok, true, JSON.stringify(d));
const refused = (d, expect = busy, ports = 0) => {
  const v = validateMessage(d, ports, expect);
  assert.equal(v.ok, false, 'accepted: ' + JSON.stringify(d));
  return v.reason;
};

test('ready only while starting, with no other field', () => {
  ok({ t: 'ready' }, starting);
  refused({ t: 'ready' }, busy);
  refused({ t: 'ready', x: 1 }, starting);
});

test('a result for the running call only', () => {
  ok({ t: 'result', id: 7, ok: true, json: '{"a":1}' });
  ok({ t: 'result', id: 7, ok: false, error: { name: 'Error', message: 'm', code: '' } });
  refused({ t: 'result', id: 8, ok: true, json: '1' });                       // another call's id
  refused({ t: 'result', id: 7, ok: true, json: '1' }, { state: 'ready', callId: null });
  refused({ t: 'result', id: 7, ok: true, json: '{' });                       // not JSON
  refused({ t: 'result', id: 7, ok: true, json: 'x'.repeat(LIMITS.resultJson + 1) });
  refused({ t: 'result', id: 7, ok: true, json: '1', extra: 1 });
  refused({ t: 'result', id: 7, ok: 'yes', json: '1' });
  refused({ t: 'result', id: 7, ok: false, error: { name: 'E', message: 'm' } }); // no code
  refused({ t: 'result', id: 7, ok: false, error: 'boom' });
});

test('logs: known levels, bounded text', () => {
  ok({ t: 'log', id: 7, level: 'warn', text: 'x' });
  refused({ t: 'log', id: 7, level: 'trace', text: 'x' });
  refused({ t: 'log', id: 7, level: 'log', text: 'x'.repeat(LIMITS.logText + 1) });
  refused({ t: 'log', id: 7, level: 'log', text: 5 });
});

test('fetch requests: shape, method, headers, body', () => {
  const f = { t: 'fetch', id: 7, req: 1, url: 'https://a.example/', method: 'GET', headers: [['accept', '*/*']], body: null };
  ok(f);
  ok({ ...f, method: 'POST', body: 'x' });
  refused({ ...f, method: 'get' });
  refused({ ...f, method: 'GET\r\n' });
  refused({ ...f, req: -1 });
  refused({ ...f, req: 1.5 });
  refused({ ...f, url: 'x'.repeat(LIMITS.url + 1) });
  refused({ ...f, headers: [['a']] });
  refused({ ...f, headers: [['a', 1]] });
  refused({ ...f, headers: Array.from({ length: LIMITS.headers + 1 }, () => ['a', 'b']) });
  refused({ ...f, body: 1 });
  const { body: _b, ...noBody } = f;
  refused(noBody);
});

test('anything else is refused: ports, unknown types, non-plain values, supervisor reports', () => {
  assert.match(refused({ t: 'ready' }, starting, 1), /MessagePort/);
  refused({ t: 'grant' });
  refused(null);
  refused('ready');
  refused([{ t: 'ready' }]);
  refused(Object.assign(Object.create({ t: 'ready' })), starting);  // inherited type
  refused(new (class X { constructor() { this.t = 'ready'; } })(), starting);
  assert.match(refused({ t: 'supervisor', reason: 'second_bind', detail: '' }), /second_bind/);
});
