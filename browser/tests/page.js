// Exposes the sandbox host to the checks (page.evaluate). A value only the host
// page holds, to show that sandboxed code never sees it (B1).
import * as host from '../host/host.js';
import * as popup from '../host/popup.js';
import * as store from '../host/store.js';
import * as tasks from '../host/tasks.js';
import * as server from '../host/server.js';
import { loadCore } from '../core/load.mjs';
import { wasmDecider } from '../core/policy.mjs';

/** @type {any} */ (window).__hostSecret = 'host-page-secret';
try { localStorage.setItem('taskyon-host-secret', 'host-page-secret'); } catch { /* not needed */ }
/** @type {any} */ (window).taskyon = { ...host, popup, store, tasks, server, loadCore, wasmDecider };
/** @type {any} */ (window).taskyonReady = true;
