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
//   3. gives the worker's harness a channel of its own: a MessagePort sent in
//      the worker's first message (`{t: 'channel'}`), which the harness takes
//      before tool code can see it and keeps in a closure (harness.js). The
//      supervisor relays host <-> harness over it, ports included, so the host
//      sees (and refuses) any message or port that is not the protocol's. The
//      worker's own global channel (`self.postMessage`) is one only tool code
//      uses: any message on it is reported (`forged_message`, or
//      `forged_supervisor` for one of the supervisor's own type, which would
//      pass for its report) and destroys the sandbox. So tool code can neither
//      send a protocol message nor see one: code an earlier call left behind
//      cannot read a later call's arguments or id, nor speak as that call (S2).
//      It decides nothing else: every message is validated in the host page.
(() => {
  'use strict';
  let port = null;
  let worker = null;
  let harness = null;  // the supervisor's end of the harness's own channel
  const parentWindow = window.parent;

  function report(reason, detail) {
    if (port !== null) port.postMessage({ t: 'supervisor', reason: String(reason), detail: String(detail || '').slice(-2048) });
  }

  function fromHarness(event) {
    const d = event.data;
    if (d !== null && typeof d === 'object' && d.t === 'supervisor') {
      for (const p of event.ports || []) p.close();
      report('forged_supervisor', 'the worker sent a message of the supervisor\'s type');
      return;
    }
    // Ports the worker transfers travel on, so the host can see them and refuse.
    port.postMessage(d, event.ports ? Array.from(event.ports) : []);
  }

  // The worker's global channel: the harness never posts on it, so the message is tool code's.
  function fromWorkerGlobal(event) {
    const d = event.data;
    for (const p of event.ports || []) p.close();
    if (d !== null && typeof d === 'object' && d.t === 'supervisor') report('forged_supervisor', 'the worker sent a message of the supervisor\'s type');
    else report('forged_message', 'tool code posted on the worker\'s global channel (the harness speaks on its own port)');
  }

  function fromHost(event) {
    const d = event.data;
    if (d !== null && typeof d === 'object' && d.t === 'terminate') {
      if (worker !== null) worker.terminate();
      if (harness !== null) harness.close();
      worker = null;
      harness = null;
      return;
    }
    if (worker === null || harness === null || (event.ports && event.ports.length)) {
      report('bad_host_message', 'after terminate or with ports');
      return;
    }
    harness.postMessage(d);
  }

  window.addEventListener('message', (event) => {
    if (port !== null) {
      report('second_bind', 'a window message after the port was bound');
      return;
    }
    const d = event.data;
    if (event.source !== parentWindow || d === null || typeof d !== 'object' || d.t !== 'bind' ||
        typeof d.source !== 'string' || !event.ports || event.ports.length !== 1 ||
        (d.kind !== 'classic' && d.kind !== 'module') || (d.expose !== undefined && d.expose !== true)) {
      return;  // not the host's handshake; nothing is bound yet
    }
    port = event.ports[0];
    port.onmessage = fromHost;
    port.onmessageerror = () => report('messageerror', 'host message could not be deserialized');
    let url = null;
    // Revoked once the worker answers (or fails): it has loaded its script by then.
    const revoke = () => { if (url !== null) { URL.revokeObjectURL(url); url = null; } };
    try {
      if (d.kind === 'module') {
        worker = new Worker('data:text/javascript;charset=utf-8,' + encodeURIComponent(d.source), { type: 'module' });
      } else {
        url = URL.createObjectURL(new Blob([d.source], { type: 'text/javascript' }));
        worker = new Worker(url);  // classic: module Blob workers are refused in an opaque origin
      }
      const channel = new MessageChannel();
      harness = channel.port1;
      harness.onmessage = (event) => { revoke(); fromHarness(event); };
      harness.onmessageerror = () => report('messageerror', 'worker message could not be deserialized');
      // The worker's first message; `expose` (a host test mode only) lets tool code hold the port.
      worker.postMessage(d.expose ? { t: 'channel', expose: true } : { t: 'channel' }, [channel.port2]);
      if (d.kind === 'module') {  // the host-verified files, on the harness's channel
        const files = d.files !== null && typeof d.files === 'object' ? d.files : {};
        const buffers = Object.values(files).filter((b) => b instanceof ArrayBuffer);
        harness.postMessage({ t: 'boot', files }, buffers);
      }
    } catch (e) {
      report('worker_failed', e && e.message);
      return;
    }
    worker.onmessage = (event) => { revoke(); fromWorkerGlobal(event); };
    worker.onmessageerror = () => report('messageerror', 'worker message could not be deserialized');
    worker.onerror = (e) => {
      e.preventDefault();
      revoke();
      report('worker_error', String(e.message || 'error').slice(0, 1024) + (e.lineno ? ' at line ' + e.lineno : ''));
    };
  });
})();
