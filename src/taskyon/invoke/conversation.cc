#include "taskyon/invoke/conversation.h"

#include <fmt/format.h>

namespace taskyon::invoke {
namespace {

using tasks::ParentRef;

Result<std::optional<std::string>> parent_of(store::Store& store, const tasks::ConversationEntry& entry,
                                             std::size_t i, const std::vector<Step>& steps) {
  using Kind = ParentRef::Kind;
  const auto last_of = [](const Step& s) { return s.result ? s.result->id : s.task.id; };
  switch (entry.parent.kind) {
    case Kind::previous:
      if (i == 0) return std::optional<std::string>();
      return std::optional<std::string>(last_of(steps[i - 1]));
    case Kind::root:
      return std::optional<std::string>();
    case Kind::entry:
      return std::optional<std::string>(steps[entry.parent.index].task.id);
    case Kind::result_of:
      return std::optional<std::string>(steps[entry.parent.index].result->id);
    case Kind::task: {
      auto t = store.task(entry.parent.task);
      if (!t) return std::unexpected(t.error());
      return std::optional<std::string>(t->id);
    }
  }
  return fail(Errc::internal, "unhandled parent reference");
}

// A stored tool-result child of a call, if the call already ran.
Result<std::optional<tasks::Task>> stored_result(store::Store& store, const std::string& call_id) {
  auto children = store.children(call_id);
  if (!children) return std::unexpected(children.error());
  for (auto& c : *children)
    if (c.content.contains("toolResult")) return std::optional<tasks::Task>(std::move(c));
  return std::optional<tasks::Task>();
}

// The verified lineage of the previous entry's last task (its result, for a
// call), kept so a chained entry does not load and verify its ancestors
// again: each ancestor is verified once per run (linear records). With it,
// its toolDefinition positions, so that resolving a name does not look at
// every ancestor again either.
struct Chain {
  std::vector<tasks::Task> lineage;
  tasks::Definitions definitions;
};

Result<Step> run_entry(store::Store& store, sandbox::Pool& pool, const tasks::ConversationEntry& entry, std::size_t i,
                       const std::vector<Step>& steps, const Options& options, Chain& chain, const RunHooks& hooks) {
  auto parent = parent_of(store, entry, i, steps);
  if (!parent) return std::unexpected(parent.error());
  tasks::Scope scope{{}, store.resolver()};
  tasks::Definitions definitions;
  if (*parent && !chain.lineage.empty() && chain.lineage.back().id == **parent) {
    scope.lineage = std::move(chain.lineage);
    definitions = std::move(chain.definitions);
  } else if (*parent) {
    auto l = store.lineage(**parent);
    if (!l) return std::unexpected(l.error());
    scope.lineage = std::move(*l);
    definitions = tasks::definitions_in(scope.lineage);
  }
  chain.lineage.clear();
  chain.definitions.clear();
  scope.definitions = &definitions;
  auto compiled = tasks::compile(entry.draft, scope);
  if (!compiled) return std::unexpected(compiled.error());
  std::vector<tasks::Task>& lineage = scope.lineage;
  // The chain after this entry: its parent's lineage, the entry, its result
  // (never a definition).
  const auto extend = [&](const Step& s) {
    chain.lineage = std::move(lineage);
    chain.definitions = std::move(definitions);
    if (tasks::is_definition(s.task)) chain.definitions.push_back(chain.lineage.size());
    chain.lineage.push_back(s.task);
    if (s.result) chain.lineage.push_back(*s.result);
  };

  Step step{i, std::move(compiled->task), std::nullopt, std::nullopt, false, std::nullopt};
  if (compiled->tool) step.tool = compiled->tool->tool;
  auto existing = store.task(step.task.id);
  if (existing) {
    step.task = std::move(*existing);
    step.reused = true;
  } else if (existing.error().code != Errc::not_found) {
    return std::unexpected(existing.error());
  }
  if (!compiled->tool) {
    if (!step.reused)
      if (auto r = store.put_tasks({step.task}); !r) return std::unexpected(r.error());
    extend(step);
    return step;
  }
  if (step.reused) {
    auto result = stored_result(store, step.task.id);
    if (!result) return std::unexpected(result.error());
    step.result = std::move(*result);
    if (step.result) {
      extend(step);
      return step;
    }
    step.reused = false;  // stored without a result: run it now
  }
  if (hooks.on_call) hooks.on_call(i, step.task);
  auto inv = run_call(store, pool, step.task, options, lineage, &definitions, std::move(compiled->tool->tool));
  if (!inv) return std::unexpected(inv.error());
  step.task = std::move(inv->call);
  step.result = std::move(inv->result);
  step.outcome = std::move(inv->outcome);
  if (!lineage.empty() || !step.task.parent_id) extend(step);  // lent and given back (or a root)
  return step;
}

}  // namespace

bool RunReport::tools_ok() const {
  for (const auto& s : steps)
    if (s.result && s.result->state != tasks::State::completed) return false;
  return true;
}

Result<RunReport> run_conversation(store::Store& store, sandbox::Pool& pool,
                                   const std::vector<tasks::ConversationEntry>& entries, const Options& options,
                                   const RunHooks& hooks) {
  RunReport report;
  Chain chain;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (options.cancel.cancelled()) {
      report.interrupted = true;
      break;
    }
    auto step = run_entry(store, pool, entries[i], i, report.steps, options, chain, hooks);
    if (!step) {
      auto e = step.error();
      e.where = fmt::format("/{}", i) + (e.where.empty() ? "" : ": " + e.where);
      return std::unexpected(e);
    }
    report.steps.push_back(std::move(*step));
    if (hooks.on_step) hooks.on_step(report.steps.back());
  }
  if (options.cancel.cancelled()) report.interrupted = true;
  return report;
}

}  // namespace taskyon::invoke
