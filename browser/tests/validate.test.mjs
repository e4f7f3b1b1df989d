// validateMessage (browser/host/validate.js) on every message type and the
// ways each can be wrong: run by `node --test` (ctest browser_validate). The
// Chromium checks (run.mjs, B3) show that a refusal destroys the sandbox; this
// shows which messages are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateMessage, checkRequest, LIMITS } from '../host/validate.js';

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

test('storage requests: a known op, a bounded key, a JSON value for set only', () => {
  const g = { t: 'storage', id: 7, req: 2, op: 'get', key: 'k', json: null };
  ok(g);
  ok({ ...g, op: 'list', key: '' });
  ok({ ...g, op: 'delete' });
  ok({ ...g, op: 'set', json: '{"a":[1,2]}' });
  refused({ ...g, op: 'clear' });
  refused({ ...g, op: 'set', json: null });                        // set needs a value
  refused({ ...g, op: 'set', json: '{' });                         // not JSON
  refused({ ...g, op: 'set', json: 'x'.repeat(LIMITS.storageJson + 1) });
  refused({ ...g, json: '1' });                                    // only set carries one
  refused({ ...g, key: 'k'.repeat(LIMITS.storageKey + 1) });
  refused({ ...g, key: 5 });
  refused({ ...g, id: 8 });                                        // another call's
  refused(g, { state: 'ready', callId: null });
  refused({ ...g, revision: 'sha256:' + '0'.repeat(64) });         // the channel names the revision (M3)
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

test('supervisor reports: exact keys and known reasons; only worker_error is a crash', () => {
  const code = (d) => { const v = validateMessage(d, 0, busy); assert.equal(v.ok, false); return v.ok === false && v.code; };
  assert.equal(code({ t: 'supervisor', reason: 'worker_error', detail: 'boom at line 3' }), 'crashed');
  assert.equal(code({ t: 'supervisor', reason: 'forged_supervisor', detail: 'x' }), 'protocol_error');
  assert.equal(code({ t: 'supervisor', reason: 'second_bind', detail: '' }), 'protocol_error');
  assert.equal(code({ t: 'supervisor', reason: 'worker_error', detail: 'x', extra: 1 }), 'protocol_error');
  assert.equal(code({ t: 'supervisor', reason: 'worker_error' }), 'protocol_error');                  // no detail
  assert.equal(code({ t: 'supervisor', reason: 'made_up', detail: '' }), 'protocol_error');
  assert.equal(code({ t: 'supervisor', reason: 'worker_error', detail: 7 }), 'protocol_error');
  assert.equal(code({ t: 'supervisor', reason: 'worker_error', detail: 'x'.repeat(LIMITS.errorText + 1) }), 'protocol_error');
  assert.match(refused({ t: 'supervisor', reason: 'worker_error', detail: 'x', extra: 1 }), /malformed/);
  assert.equal(code({ t: 'grant' }), 'protocol_error');
});

test('request rules: header names are tokens, values without CR/LF/NUL, forbidden headers and methods refused', () => {
  const get = (headers, method = 'GET') => checkRequest({ method, headers });
  assert.equal(get([]), null);
  assert.equal(get([['accept', '*/*'], ['x-api-key', 'k'], ['Authorization', 'Bearer {{secret:T}}'], ['content-type', 'text/plain']]), null);
  assert.equal(get([], 'POST'), null);
  for (const m of ['CONNECT', 'TRACE', 'TRACK']) assert.equal(get([], m)?.code, 'policy_blocked', m);
  for (const n of ['', 'a b', 'a:b', 'a\r\nb', 'ä', 'x(y)', 'a\0']) {
    assert.equal(get([[n, 'v']])?.code, 'invalid_request', JSON.stringify(n));
  }
  for (const v of ['a\rb', 'a\nb', 'a\0b', 'x\r\nInjected: 1']) {
    const r = get([['x-ok', v]]);
    assert.equal(r?.code, 'invalid_request', JSON.stringify(v));
    assert.match(r.message, /CR, LF or NUL/);
  }
  const forbidden = ['Cookie', 'cookie2', 'Host', 'Connection', 'Content-Length', 'Transfer-Encoding', 'Keep-Alive', 'TE',
    'Trailer', 'Upgrade', 'Expect', 'Proxy-Authorization', 'proxy-x', 'Sec-Fetch-Site', 'sec-anything', 'Origin', 'Referer',
    'Accept-Charset', 'Accept-Encoding', 'Access-Control-Request-Headers', 'Access-Control-Request-Method', 'Date', 'DNT',
    'Via', 'Set-Cookie', 'X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override'];
  for (const n of forbidden) {
    const r = get([['accept', '*/*'], [n, 'v']]);
    assert.equal(r?.code, 'policy_blocked', n);
    assert.match(r.message, new RegExp(`header "${n}" is refused: `));
  }
  assert.equal(get([['cookies', 'v'], ['hostname', 'x'], ['x-origin', 'y']]), null);  // exact names, not prefixes
  assert.match(get([['a b'.repeat(40), 'v']]).message, /\.\.\.".*token/);                  // long names cut when shown
  assert.match(get([['a\u0001', 'v']]).message, /a\\x01/);                                // odd characters escaped
});
