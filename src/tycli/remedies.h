// What lifts a refusal: after `call` or `run`, each fetch refused for want of
// a grant or a secret is followed on stderr by the command that would allow
// it (`tycli grant fetch …`, `tycli secret set …`), once per distinct refusal.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli.h"
#include "taskyon/invoke/capabilities.h"

namespace tycli {

class Remedies {
 public:
  Remedies();
  // Makes `options` report refusals here (CapabilityOptions::missing).
  void attach(taskyon::invoke::CapabilityOptions& options);
  // Prints, on stderr, the commands for the refusals seen since the last
  // print (nothing with --json: the audit log has them). A revision that is
  // its tool's active one is named by the tool's name, else by its id.
  void print(const Globals& g, taskyon::store::Store& store);

 private:
  struct Seen {
    std::mutex mu;
    std::vector<taskyon::invoke::MissingAuthority> missing;
  };
  std::shared_ptr<Seen> seen_;
};

}  // namespace tycli
