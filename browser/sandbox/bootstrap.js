// The sandbox supervisor: the only script of the sandbox iframe's srcdoc, pinned
// by its SHA-256 in the iframe's CSP (browser/host/sandbox.js computes the hash
// from these exact bytes; editing this file changes the hash, nothing else).
//
// It runs in an opaque origin (sandbox="allow-scripts", never allow-same-origin)
// and does three things:
//   1. binds exactly one MessagePort, the first `{t: 'bind'}` message from the
//      parent window carrying one port; any later window message is reported to
//      the host over that port (`{t: 'supervisor', reason: 'second_bind'}`),
//      which destroys the sandbox (B3);
//   2. starts the classic Blob worker from the source the host sends in that
//      bind message (harness + tool code, built by the host: no eval here);
//      for a Python sandbox (`kind: 'module'`) a module worker from a data:
//      URL (Pyodide refuses classic workers, Chromium module Blob workers in
//      an opaque origin), handed the host-verified `files` as `{t: 'boot'}`;
//   3. relays: host -> worker for calls and replies, worker -> host for
//      everything, ports included, so the host sees (and refuses) any message
//      or port the tool code makes up — except a worker message of the
//      supervisor's own type (`t: 'supervisor'`): worker and supervisor share
//      the port, so such a message would pass for the supervisor's report (a
//      made-up `worker_error` recorded as `crashed`); it is reported as
//      `forged_supervisor` instead (a protocol violation). It decides nothing
//      else: every message is validated in the host page.
(() => {
  'use strict';
  let port = null;
  let worker = null;
  const parentWindow = window.parent;

  function report(reason, detail) {
    if (port !== null) port.postMessage({ t: 'supervisor', reason: String(reason), detail: String(detail || '').slice(-2048) });
  }

  function fromWorker(event) {
    const d = event.data;
    if (d !== null && typeof d === 'object' && d.t === 'supervisor') {
      for (const p of event.ports || []) p.close();
      report('forged_supervisor', 'the worker sent a message of the supervisor\'s type');
      return;
    }
    // Ports the worker transfers travel on, so the host can see them and refuse.
    port.postMessage(d, event.ports ? Array.from(event.ports) : []);
  }

  function fromHost(event) {
    const d = event.data;
    if (d !== null && typeof d === 'object' && d.t === 'terminate') {
      if (worker !== null) worker.terminate();
      worker = null;
      return;
    }
    if (worker === null || (event.ports && event.ports.length)) {
      report('bad_host_message', 'after terminate or with ports');
      return;
    }
    worker.postMessage(d);
  }

  window.addEventListener('message', (event) => {
    if (port !== null) {
      report('second_bind', 'a window message after the port was bound');
      return;
    }
    const d = event.data;
    if (event.source !== parentWindow || d === null || typeof d !== 'object' || d.t !== 'bind' ||
        typeof d.source !== 'string' || !event.ports || event.ports.length !== 1 ||
        (d.kind !== 'classic' && d.kind !== 'module')) {
      return;  // not the host's handshake; nothing is bound yet
    }
    port = event.ports[0];
    port.onmessage = fromHost;
    port.onmessageerror = () => report('messageerror', 'host message could not be deserialized');
    let url = null;
    try {
      if (d.kind === 'module') {
        worker = new Worker('data:text/javascript;charset=utf-8,' + encodeURIComponent(d.source), { type: 'module' });
        const files = d.files !== null && typeof d.files === 'object' ? d.files : {};
        const buffers = Object.values(files).filter((b) => b instanceof ArrayBuffer);
        worker.postMessage({ t: 'boot', files }, buffers);
      } else {
        url = URL.createObjectURL(new Blob([d.source], { type: 'text/javascript' }));
        worker = new Worker(url);  // classic: module Blob workers are refused in an opaque origin
      }
    } catch (e) {
      report('worker_failed', e && e.message);
      return;
    }
    // Revoked once the worker answers (or fails): it has loaded its script by then.
    const revoke = () => { if (url !== null) { URL.revokeObjectURL(url); url = null; } };
    worker.onmessage = (event) => { revoke(); fromWorker(event); };
    worker.onmessageerror = () => report('messageerror', 'worker message could not be deserialized');
    worker.onerror = (e) => {
      e.preventDefault();
      revoke();
      report('worker_error', String(e.message || 'error').slice(0, 1024) + (e.lineno ? ' at line ' + e.lineno : ''));
    };
  });
})();
