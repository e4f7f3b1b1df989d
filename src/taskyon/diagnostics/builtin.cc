#include "taskyon/diagnostics/builtin.h"

#include <algorithm>

#include "taskyon/diagnostics/groups.h"

namespace taskyon::diagnostics {

const std::vector<Contract>& contracts() {
  static const std::vector<Contract> table = {
      {"R1", "revision ids are content addresses of canonical JSON"},
      {"R2", "stored revisions are immutable; tampering is detected"},
      {"R3", "activating a revision changes only the name binding"},
      {"R4", "lookup by name, full id or unique prefix; ambiguity is an error"},
      {"R5", "native implementations never cross the protocol; unknown native ids are refused"},
      {"R6", "trusted-native install needs explicit trust, recorded"},
      {"T1", "compilation pins tool and settings revisions before hashing"},
      {"T2", "a compiled call runs its pinned revision after re-activation"},
      {"T3", "persistence refuses a completed executable task without tool revision (API and database)"},
      {"T4", "task ids are content hashes including the parent; mismatches are refused"},
      {"T5", "tooldefinition tasks are lexically scoped to their following lineage"},
      {"T6", "tooldefinition tasks never enter the registry"},
      {"T7", "tooldefinition tasks hold only sandboxed code or a pinned registry binding"},
      {"T8", "chat completion gets reduced signatures only"},
      {"T9", "definition nodes stay out of model messages and copied chat"},
      {"S1", "sandboxes are retained per revision; revisions never share one"},
      {"S2", "calls to one sandbox are serialized with separate capability contexts"},
      {"S3", "a revision change destroys the old sandbox"},
      {"S4", "timeout or runtime-boundary failure destroys the sandbox"},
      {"S5", "abort or terminate destroys the sandbox"},
      {"S6", "disposable mode uses a fresh sandbox and destroys it"},
      {"S7", "retained state is not durable; storage is"},
      {"N1", "Node is the default JS runtime of the CLI"},
      {"N2", "Deno only when selected and installed"},
      {"N3", "JS sees only mediated capabilities (no fs, env, net, subprocess)"},
      {"N4", "Deno runs with no Deno permissions"},
      {"P1", "native Python is offered only when an interpreter is detected"},
      {"P2", "native Python needs session approval before its first run"},
      {"P3", "the CLI never loads Pyodide"},
      {"M1", "no generic RPC: unknown frames are boundary failures"},
      {"M2", "global fetch and context.fetch are one implementation"},
      {"M3", "capability decisions use the channel's identity"},
      {"M4", "HTTPS only"},
      {"M5", "URL credentials refused"},
      {"M6", "local/private/metadata targets blocked, at connect time too"},
      {"M7", "methods classified read/write; CONNECT/TRACE/TRACK refused"},
      {"M8", "authorization per (revision, origin, access class)"},
      {"M9", "no ambient credentials"},
      {"M10", "no automatic redirects"},
      {"M11", "timeouts enforced"},
      {"M12", "response-size limits enforced"},
      {"M13", "denial, cancellation and limits become tool errors"},
      {"M14", "createSubtasksResult returns core-compiled, hashed, pinned tasks"},
      {"M15", "resolveInvocation returns opaque revisions only"},
      {"M16", "popups need a permission for custom-html or an exact HTTPS origin"},
      {"M17", "grants and secrets are scoped to the revision"},
      // DESIGN §8, the long-lived host
      {"H1", "the server listens on loopback or a unix socket unless told otherwise; every request must carry the server's secret token, and one without it changes and reveals nothing"},
      {"H2", "HTTP requests whose `Origin` or `Host` is not the server's own are refused (no DNS rebinding of the local server)"},
      {"H3", "retained sandboxes are keyed by (revision, session): one session's in-memory state never reaches another session's call"},
      {"H4", "a client sees reduced signatures only; every result names its task and pinned revisions"},
      {"H5", "a client's cancellation or disconnect destroys the sandbox of its running call and records the call as cancelled"},
      {"H6", "activation changes reach the next `tools/list` and never change a pinned or running call"},
      // DESIGN §9, the browser host
      {"B1", "sandboxed code never runs in the host origin: only in a Blob worker of an opaque-origin sandboxed iframe"},
      {"B2", "the sandbox's CSP blocks every direct network path (fetch, XHR, WebSocket, EventSource, imports, nested workers, images) and `eval`; a logging server sees zero requests"},
      {"B3", "one validated MessagePort per sandbox; any other message destroys the sandbox"},
      {"B4", "a timed-out or aborted CPU-bound sandbox stops running within 200 ms (the iframe is removed when the worker does not stop)"},
      {"B5", "a worker cannot open windows; a host window opens only for a trusted host tool holding permission for custom-html or an exact HTTPS origin, with `noopener`, never in the host origin"},
      {"B6", "Pyodide assets are verified by SHA-256 before use; one changed byte refuses to start"},
      {"B7", "a retained Python runtime is keyed by (revision, session); its carried-over state never crosses sessions"},
      {"B8", "in strict mode every mediated request passes the server's egress proxy (§8), which applies §6 in full"},
  };
  return table;
}

std::string_view contract_text(std::string_view id) {
  for (const auto& c : contracts()) {
    if (c.id == id) return c.text;
  }
  return {};
}

// Contracts whose parts are still being built: the browser host (§9,
// issue 14). Remove an id here when its
// first check lands.
const std::vector<std::string_view>& not_yet_covered() {
  static const std::vector<std::string_view> ids = {"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"};
  return ids;
}

const Registry& builtin() {
  static const Registry registry = [] {
    Registry r;
    add_registry_checks(r);
    add_task_checks(r);
    add_sandbox_checks(r);
    add_python_checks(r);
    add_policy_checks(r);
    add_lifecycle_checks(r);
    add_capability_checks(r);
    add_serve_checks(r);
    add_host_checks(r);
    return r;
  }();
  return registry;
}

}  // namespace taskyon::diagnostics
