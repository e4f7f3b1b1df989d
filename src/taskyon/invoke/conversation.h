// The main job: running a conversation file (tasks/conversation.h). Entries are
// compiled in order in their lexical scope, stored, and each function call runs
// in its sandbox with its result appended as a child task. Ids are content
// addresses, so running the same file again finds the same tasks: stored
// tasks are reused, and a call that already has a result is not run again.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/conversation.h"

namespace taskyon::invoke {

struct Step {
  std::size_t index = 0;                        // entry in the file
  tasks::Task task;                             // as stored
  std::optional<tasks::Task> result;            // function calls: the tool-result task
  std::optional<tasks::ResolvedTool> tool;      // function calls: the pinned tool
  bool reused = false;                          // found stored (same id), nothing new made
  std::optional<sandbox::CallOutcome> outcome;  // function calls that ran now
};

struct RunReport {
  std::vector<Step> steps;
  bool interrupted = false;  // options.cancel fired (a signal): the entries after `steps` were not run
  bool tools_ok() const;     // no tool call of this run failed
};

// Errors stop the run at the entry that caused them; `where` starts with the
// entry's JSON pointer ("/3: …"). Tasks stored before it stay (they are valid
// and content-addressed: running the fixed file again reuses them). Once
// options.cancel fires the run stops after the entry in progress (its call
// stored as Cancelled) and reports `interrupted`.
// What a run reports while it goes (tycli run prints each entry as it
// finishes), on the calling thread: on_call right before entry `index`'s
// call runs (not for a call reused with its stored result), on_step once an
// entry is done (the same Step later found in RunReport::steps).
struct RunHooks {
  std::function<void(std::size_t index, const tasks::Task& call)> on_call = {};
  std::function<void(const Step& step)> on_step = {};
};

Result<RunReport> run_conversation(store::Store& store, sandbox::Pool& pool,
                                   const std::vector<tasks::ConversationEntry>& entries, const Options& options,
                                   const RunHooks& hooks = {});

}  // namespace taskyon::invoke
