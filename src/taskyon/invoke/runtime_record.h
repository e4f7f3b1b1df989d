// Which runtime produced a stored result (issue 16 item 2; docs/tasks.md,
// "Runtime records"). A record is the JSON object
//   {"kind": "node"|"deno"|"python"|"browser", "version": STRING[, "isolation": "strict"|"host"]}
// version: node's process.version ("v22.12.0"), deno's Deno.version.deno
// ("2.1.4"), python's sys.version's first word ("3.11.7"); "unknown" when the
// runtime could not say; for "browser" (a call a page ran through `tycli
// serve`'s runs, external_run.h) the page's own description of its browser,
// recorded as its claim. isolation: Python only (--python-isolation).
// run_call stores it in the tool-result content as toolResult.runtime, so it
// is part of the result's content address. Tools that run in no runtime of
// ours (other trusted natives, MCP servers, HTTPS endpoints) get no record.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/native/native.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"

namespace taskyon::invoke {

// The runtime `tool` would run on: sandboxed code on the pool's JS runtime
// (`config`, located and asked its version once per process), executePython
// on the detected python3 under the session's isolation (strict without a
// session). nullopt for the other execution classes and when the runtime is
// not installed (the call itself then fails with Errc::runtime_missing).
std::optional<json::Value> runtime_for(const registry::Manifest& tool, const sandbox::RuntimeConfig& config,
                                       const native::Session* natives);

// Locates config's JS runtime and asks its version now, as the first
// sandboxed call's runtime_for would (both kept per process): a long-lived
// host calls it when it opens, so that its first call does not fork
// `node --version` (~50 ms; issue 19). Nothing happens when the runtime is
// not installed (the call then fails as before).
void prepare_runtime_record(const sandbox::RuntimeConfig& config);

// "node v22.12.0", "deno 2.1.4", "python 3.11.7 (strict)"; "unknown" for a
// null record (a result stored before records existed).
std::string describe_runtime(const json::Value& record);

// The runtime recorded in a tool-result task: its record, or null when it
// has none ("unknown": stored before records, or not one of ours).
json::Value recorded_runtime(const tasks::Task& result);

// A stored call about to run again.
struct RuntimeComparison {
  json::Value recorded;            // of its latest stored result, or of one that ran on `now`; null: unknown or never ran
  bool ran = false;                // it has a stored result
  std::optional<json::Value> now;  // what it would run on now (runtime_for)
  // A different runtime kind, or Python isolation, than the one recorded.
  // Not a mismatch: an unknown record, no record now, another version of the
  // same runtime (reported, see version_differs).
  bool mismatch() const;
  bool version_differs() const;
};

// Compares the runtime recorded for `call`'s latest result (its children in
// the store) with the one it would run on in `pool` and `natives`. Errors:
// those of resolving its pinned revision (Errc::not_found, Errc::integrity)
// or reading the store.
Result<RuntimeComparison> compare_runtime(store::Store& store, const sandbox::Pool& pool, const tasks::Task& call,
                                          const native::Session* natives);

}  // namespace taskyon::invoke
