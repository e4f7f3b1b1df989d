#include "cli.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "taskyon/base/escape.h"

namespace tycli {

using taskyon::Errc;

int exit_code_for(const taskyon::Error& error) {
  switch (error.code) {
    case Errc::store:
    case Errc::io:
    case Errc::runtime_missing:
    case Errc::internal:
      return kExitEnvironment;
    default:
      return kExitBadInput;
  }
}

int report(const Globals& g, const taskyon::Error& error) {
  if (g.json) {
    taskyon::json::Value e = {{"code", taskyon::code_name(error.code)}, {"message", error.message}};
    if (!error.where.empty()) e["where"] = error.where;
    print_json({{"error", e}});
  } else {
    // Messages may quote tool text (a tool's error, a name it chose): escaped.
    std::cerr << fmt::format("tycli: error: {} [{}]\n", taskyon::escape_terminal(error.describe()),
                             taskyon::code_name(error.code));
  }
  return exit_code_for(error);
}

taskyon::Result<taskyon::store::Store> open_store(const Globals& g) {
  std::string path = g.db_path;
  if (path.empty()) {
    auto p = taskyon::store::default_db_path();
    if (!p) return std::unexpected(p.error());
    path = *p;
  }
  return taskyon::store::Store::open(path);
}

taskyon::Result<taskyon::json::Value> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return taskyon::fail(Errc::io, "cannot read file", path);
  std::ostringstream text;
  text << in.rdbuf();
  auto value = taskyon::json::parse(text.str());
  if (!value) {
    auto e = value.error();
    e.where = e.where.empty() ? path : path + ": " + e.where;
    if (e.code == Errc::io) e.code = Errc::invalid_json;
    return std::unexpected(e);
  }
  return value;
}

taskyon::Result<taskyon::json::Value> json_argument(const std::string& text, const std::string& option) {
  if (!text.empty() && text.front() == '@') {
    auto v = read_json_file(text.substr(1));
    if (!v && v.error().code == Errc::io) v.error().code = Errc::bad_usage;
    return v;
  }
  auto value = taskyon::json::parse(text);
  if (!value) {
    auto e = value.error();
    e.where = e.where.empty() ? option : option + ": " + e.where;
    return std::unexpected(e);
  }
  return value;
}

void print_json(const taskyon::json::Value& value) {
  std::cout << value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

std::string short_id(const std::string& id) { return id.size() > 19 ? id.substr(0, 19) : id; }

}  // namespace tycli
