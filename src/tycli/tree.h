// Printing tasks and task trees for people and as JSON.
#pragma once

#include <functional>
#include <string>

#include "taskyon/json/json.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"

namespace tycli {

// One line for a task: id, role, and what it holds (message text, call and
// pinned revision, result, definition and its revision). Ids are short
// (cli.h short_id) unless `full_ids` (--full-ids).
std::string task_line(const taskyon::tasks::Task& task, bool full_ids);

// "made by tool call ID (revision REV)" for a tool-made task; empty otherwise.
std::string provenance_text(const taskyon::tasks::Task& task, bool full_ids);

// Prints the tree under `root` with box-drawing branches; `mark` may add a
// suffix per task (e.g. "new"). Errors from loading children are returned.
taskyon::Result<void> print_tree(taskyon::store::Store& store, const taskyon::tasks::Task& root,
                                 const std::function<std::string(const taskyon::tasks::Task&)>& mark, bool full_ids);

// The tree under `root` as nested JSON: host::tree_json (taskyon/host/views.h).
taskyon::Result<taskyon::json::Value> tree_json(taskyon::store::Store& store, const taskyon::tasks::Task& root);

}  // namespace tycli
