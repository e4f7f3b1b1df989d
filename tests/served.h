// `tycli serve` as a client meets it, for the tests that drive one: a real
// server process on loopback in its own TASKYON_HOME, a real HTTP client
// (cpp-httplib's). Used by serve_test.cc and serve_runs_test.cc.
#pragma once

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "taskyon/json/json.h"
#include "test_util.h"

namespace taskyon::testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One `tycli serve` process in its own TASKYON_HOME.
class Served {
 public:
  // `extra`: global options (before `serve`); `serve_args`: serve's own (after it).
  Served(const TempDir& home, std::vector<std::string> extra = {}, std::vector<std::string> serve_args = {}) {
    std::vector<std::string> args = {"--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("serve");
    args.insert(args.end(), serve_args.begin(), serve_args.end());
    log_ = (home.path() / "serve.log").string();
    pid_ = spawn_tycli(args, home.path(), log_);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < until && port_ == 0) {
      std::istringstream lines(slurp(log_));
      for (std::string line; std::getline(lines, line);) {
        auto v = json::parse(line);
        if (v && v->is_object() && v->contains("port")) {
          port_ = (*v)["port"].get<int>();
          token_file_ = (*v)["tokenFile"].get<std::string>();
          if (v->contains("pageUrl")) page_url_ = (*v)["pageUrl"].get<std::string>();
        }
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (port_ != 0) {
      token_ = slurp(token_file_);
      if (!token_.empty() && token_.back() == '\n') token_.pop_back();
    }
  }
  ~Served() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      wait_exit(pid_);
    }
  }
  int stop(int signal = SIGTERM) {
    ::kill(pid_, signal);
    const int rc = wait_exit(pid_);
    pid_ = -1;
    return rc;
  }
  bool up() const { return port_ != 0 && !token_.empty(); }
  int port() const { return port_; }
  const std::string& token() const { return token_; }
  const std::string& token_file() const { return token_file_; }
  const std::string& page_url() const { return page_url_; }
  std::string log() const { return slurp(log_); }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(std::chrono::seconds(30));
    return c;
  }
  httplib::Headers auth(httplib::Headers extra = {}) const {
    extra.emplace("Authorization", "Bearer " + token_);
    return extra;
  }
  httplib::Result get(const std::string& path, httplib::Headers headers) const { return client()->Get(path, headers); }
  httplib::Result get(const std::string& path) const { return get(path, auth()); }
  httplib::Result post(const std::string& path, const std::string& body, httplib::Headers headers) const {
    return client()->Post(path, headers, body, "application/json");
  }
  httplib::Result post(const std::string& path, const json::Value& body) const { return post(path, body.dump(), auth()); }

 private:
  std::string log_, token_file_, token_, page_url_;
  int pid_ = -1;
  int port_ = 0;
};

inline json::Value body_of(const httplib::Result& r) {
  if (!r) return json::Value();
  auto v = json::parse(r->body);
  return v ? *v : json::Value("not JSON: " + r->body);
}

// `tycli --json ARGS` in `home`: its JSON answer, or a string saying how it failed.
inline json::Value cli_json(const std::filesystem::path& home, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--json"};
  all.insert(all.end(), args.begin(), args.end());
  auto r = run_tycli(all, home);
  auto v = json::parse(r.out);
  return v ? *v : json::Value("tycli failed: " + r.err + r.out);
}

}  // namespace taskyon::testing
