#include "taskyon/base/error.h"

namespace taskyon {

std::string_view code_name(Errc code) {
  switch (code) {
    case Errc::bad_usage: return "bad_usage";
    case Errc::invalid_json: return "invalid_json";
    case Errc::not_canonical: return "not_canonical";
    case Errc::invalid_manifest: return "invalid_manifest";
    case Errc::invalid_task: return "invalid_task";
    case Errc::invalid_arguments: return "invalid_arguments";
    case Errc::not_found: return "not_found";
    case Errc::ambiguous: return "ambiguous";
    case Errc::integrity: return "integrity";
    case Errc::store: return "store";
    case Errc::io: return "io";
    case Errc::runtime_missing: return "runtime_missing";
    case Errc::internal: return "internal";
  }
  return "internal";
}

std::string Error::describe() const {
  if (where.empty()) return message;
  return message + " (at " + where + ")";
}

}  // namespace taskyon
