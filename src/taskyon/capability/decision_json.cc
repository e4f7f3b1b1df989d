#include "taskyon/capability/decision_json.h"

namespace taskyon::capability {

std::string printable_bytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) {
      const char escaped[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xF]};
      out.append(escaped, 4);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

json::Value decision_json(const Decision& d) {
  auto text_or_null = [](const std::string& s) { return s.empty() ? json::Value() : json::Value(s); };
  return json::Value{{"verdict", std::string(verdict_name(d.verdict))},
                     {"access", std::string(access_name(d.access))},
                     {"reasonClass", std::string(reason_class_name(d.reason_class))},
                     {"reason", d.reason},
                     {"method", printable_bytes(d.method)},
                     {"methodReason", std::string(d.method_reason)},
                     {"href", text_or_null(d.href)},
                     {"origin", text_or_null(d.origin)},
                     {"host", text_or_null(d.host)},
                     {"admitted", d.admits()}};
}

}  // namespace taskyon::capability
