// The host side of the capability requests of one call (DESIGN §6, issue 5):
// every request a sandbox makes during one function call is decided here,
// with the revision bound to the sandbox's channel (M3), and written to the
// audit log (store/audit.h). Requests and their answers:
//   fetch                 capability::fetch (policy -> method class -> grant for
//                         (revision, origin, access) -> request on libcurl);
//                         value {"status","statusText","headers":[[n,v]…],
//                         "body":BASE64,"url"}; refusals and limits are
//                         errors with the stable codes of fetch.h (M13)
//   createSubtasksResult  {"drafts":[{role,content,labels?}…]}: compiled by the
//                         core as children of the calling task (pinned, hashed,
//                         M14), returned as task JSON (tasks::task_json) and
//                         stored after the call with the call and its result.
//                         At most kMaxSubtasks per call; a draft at most
//                         kMaxDraftBytes of JSON. Codes: invalid_request, too_large
//   resolveInvocation     {"name"}: {"tool":"sha256:…","settings":"sha256:…"}
//                         and nothing else (M15); code not_found
//   storage.*             store/kv.h: needs a storage grant for the revision (S7)
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "taskyon/capability/fetch.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"
#include "taskyon/tasks/tool_requests.h"

namespace taskyon::invoke {

inline constexpr std::size_t kMaxSubtasks = tasks::kMaxSubtasks;      // drafts per call (tasks/tool_requests.h)
inline constexpr std::size_t kMaxDraftBytes = tasks::kMaxDraftBytes;  // one draft's JSON, bytes
// Audit rows one call writes one by one; past it, the decisions are still
// made but counted, and one last row (capability "audit.more") says how many
// more were refused and allowed (issue 12.7: a tool cannot fill the disk).
inline constexpr std::size_t kMaxAuditRowsPerCall = 100;

// A fetch that no grant allows, put to a person (--ask on a TTY). The answer:
//   no      denied (nothing recorded);
//   once    allowed for the rest of this call only (no grant is stored; the
//           audit row says "asked, once");
//   always  recorded as a grant for exactly (revision, origin, access).
struct GrantQuestion {
  std::string revision;
  std::string tool;
  std::string origin;
  capability::Access access;
};
enum class GrantAnswer { no, once, always };
using AskGrant = std::function<GrantAnswer(const GrantQuestion&)>;

// A refusal a person can lift (a CLI prints the command that does it): no
// fetch grant for (revision, origin, access), or no secret `secret` stored
// for (revision, origin).
struct MissingAuthority {
  enum class Kind { grant, secret } kind = Kind::grant;
  std::string revision;
  std::string tool;
  std::string origin;
  capability::Access access = capability::Access::read;  // Kind::grant
  std::string secret;                                    // Kind::secret: the name in {{secret:NAME}}
};
using OnMissing = std::function<void(const MissingAuthority&)>;

struct CapabilityOptions {
  capability::NetworkRules network;  // TEST-ONLY admission (loopback servers); empty in production
  capability::Resolver resolve;      // TEST-ONLY resolver seam (FetchContext::resolve); empty: the system resolver
  AskGrant ask;                      // empty: a missing grant is "denied"
  std::string asked_by = "ask";      // recorded as who granted an answer to `ask`
  // Told of every refused request a grant or secret would have allowed, on
  // the thread deciding it (under the capabilities' store lock: never call
  // back into the store); empty: nobody is told. The refusal stands.
  OnMissing missing;
};

class HostCapabilities final : public sandbox::Capabilities {
 public:
  // `call` is the function-call task being run (its id parents subtasks);
  // `lineage` is its parent's lineage, root first (empty for a root call);
  // `revision` and `tool` are what the call is pinned to.
  HostCapabilities(store::Store& store, tasks::Task call, std::vector<tasks::Task> lineage, std::string revision,
                   std::string tool, CapabilityOptions options);
  ~HostCapabilities() override;  // writes the "N more refused" row, if any
  HostCapabilities(const HostCapabilities&) = delete;
  HostCapabilities& operator=(const HostCapabilities&) = delete;

  sandbox::CapabilityReply handle(std::string_view revision, sandbox::CapabilityOp op, const json::Value& args,
                                  const sandbox::CancelToken& cancel,
                                  std::chrono::steady_clock::time_point deadline) override;

  // A request of an ended call of the same sandbox (S2): refused by the pool,
  // audited here as a deny under that ended call's task (`ended`), never this
  // call's; its target is the op's own (url, key, name), nothing is done.
  void refused_stale(std::string_view revision, sandbox::CapabilityOp op, const json::Value& args,
                     std::string_view ended) override;

  // Called on the thread that runs the call, which then waits for the
  // sandbox: the requests' store uses go through that thread's connection
  // (store::Store::lend; issue 19: one connection, so neither commit empties
  // the other's page cache). Only where the calling thread does not use the
  // store until the call's requests have ended (invoke::run_call).
  void lend_callers_connection();

  // The subtasks compiled during the call, in order (to store after it).
  const std::vector<tasks::Task>& subtasks() const { return subtasks_; }
  // Gives back the parent's lineage passed in (the call itself removed), for
  // a caller that lends the same lineage to its next call; `this` keeps none.
  std::vector<tasks::Task> take_lineage();

 private:
  sandbox::CapabilityReply fetch(const json::Value& args, const sandbox::CancelToken& cancel,
                                 std::chrono::steady_clock::time_point deadline);
  sandbox::CapabilityReply create_subtasks(const json::Value& args);
  sandbox::CapabilityReply resolve_invocation(const json::Value& args);
  sandbox::CapabilityReply storage(sandbox::CapabilityOp op, const json::Value& args);
  void audit(std::string capability, std::string target, std::string access, bool allowed, std::string reason);

  class StoreUse;  // this call's lock, and the lent connection if any

  store::Store& store_;
  store::Store::Loan loan_;  // empty: each thread its own connection
  std::mutex store_mu_;
  tasks::Task call_;
  std::vector<tasks::Task> lineage_;  // the parent's lineage, then the call itself
  std::string revision_;
  std::string tool_;
  CapabilityOptions options_;
  std::vector<tasks::Task> subtasks_;
  std::size_t audit_rows_ = 0;          // rows written for this call
  std::size_t unrecorded_refused_ = 0;  // decisions past kMaxAuditRowsPerCall
  std::size_t unrecorded_allowed_ = 0;
  std::vector<std::pair<std::string, capability::Access>> allowed_once_;  // GrantAnswer::once, this call
};

// RFC 4648 §4 base64, as the capability frames carry bytes.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace taskyon::invoke
