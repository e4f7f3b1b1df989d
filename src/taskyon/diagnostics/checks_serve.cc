// H1/H2 (DESIGN §8) against a real `tycli serve` process (Settings::tycli_path)
// on this check's own store, driven by a real HTTP client (cpp-httplib's):
// requests without the token, or with a foreign Origin or Host, are refused
// and change nothing in the store.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "taskyon/base/spawn.h"
#include "taskyon/diagnostics/groups.h"

extern char** environ;

namespace taskyon::diagnostics {
namespace {

using json::Value;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `tycli --json --db DIR/taskyon.db serve --token-file DIR/serve.token`, its
// stdout and stderr in DIR/serve.log; SIGTERM and reaped on destruction.
class Serve {
 public:
  explicit Serve(Env& env) {
    if (env.settings().tycli_path.empty()) skip_check("needs the tycli executable (run it as `tycli diagnostics`)");
    (void)env.store();  // the store exists before the server opens it
    const auto log = (env.dir() / "serve.log").string();
    const std::string db = (env.dir() / "taskyon.db").string();
    token_file_ = (env.dir() / "serve.token").string();
    std::vector<std::string> args = {env.settings().tycli_path, "--json", "--db", db, "serve", "--token-file", token_file_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const SpawnAttributes attr;
    const int rc = posix_spawn(&pid_, argv[0], &actions, attr.get(), argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) fail_check(fmt::format("cannot start {} serve", args[0]));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (port_ == 0 && std::chrono::steady_clock::now() < until) {
      std::istringstream lines(slurp(log));
      for (std::string line; std::getline(lines, line);) {
        auto v = json::parse(line);
        if (v && v->is_object() && v->contains("port")) port_ = (*v)["port"].get<int>();
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (port_ == 0) fail_check("tycli serve did not report its port: " + slurp(log));
    token_ = slurp(token_file_);
    if (!token_.empty() && token_.back() == '\n') token_.pop_back();
  }
  ~Serve() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  int port() const { return port_; }
  const std::string& token() const { return token_; }

  // POST /v1/tools with `headers`; the status (-1: no answer).
  int install(const Value& manifest, httplib::Headers headers) const {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Post("/v1/tools", headers, manifest.dump(), "application/json");
    return r ? r->status : -1;
  }
  int list(httplib::Headers headers, std::string* body = nullptr) const {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/v1/tools", headers);
    if (r && body) *body = r->body;
    return r ? r->status : -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string token_file_, token_;
};

std::size_t tools_in(Env& env) { return need(env.store().tools(), "list the store's tools").size(); }

Outcome token_required(Env& env) {
  Serve s(env);
  const Value manifest = js_tool("probe", "() => 1");
  const httplib::Headers good = {{"Authorization", "Bearer " + s.token()}};
  expect(s.install(manifest, good) == 201, "an install with the token did not succeed");
  std::string body;
  for (const httplib::Headers& h : {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer " + std::string(64, 'f')}},
                                    httplib::Headers{{"Authorization", "Bearer " + s.token() + "x"}}}) {
    expect(s.install(js_tool("other", "() => 2"), h) == 401, "an install without the right token was not 401");
    expect(s.list(h, &body) == 401, "a list without the right token was not 401");
    expect(body.find("probe") == std::string::npos, "a refused list revealed a tool name");
  }
  expect(tools_in(env) == 1, "a refused install changed the store");
  return pass("tycli serve on 127.0.0.1: requests without the token or with a wrong one get 401, reveal no tool and "
              "change nothing in the store");
}

Outcome origin_and_host_checked(Env& env) {
  Serve s(env);
  const std::string auth = "Bearer " + s.token();
  const std::string port = std::to_string(s.port());
  const Value manifest = js_tool("probe", "() => 1");
  for (const httplib::Headers& h :
       {httplib::Headers{{"Authorization", auth}, {"Origin", "http://evil.example"}},
        httplib::Headers{{"Authorization", auth}, {"Origin", "null"}},
        httplib::Headers{{"Authorization", auth}, {"Host", "evil.example:" + port}},
        httplib::Headers{{"Authorization", auth}, {"Host", "rebound.example:" + port}, {"Origin", "http://rebound.example:" + port}}})
    expect(s.install(manifest, h) == 403, "a request with a foreign Origin or Host was not 403");
  expect(tools_in(env) == 0, "a refused request changed the store");
  expect(s.install(manifest, {{"Authorization", auth}, {"Origin", "http://127.0.0.1:" + port}}) == 201,
         "the server's own origin was refused");
  return pass("foreign Origin (a web page) and foreign Host (DNS rebinding) get 403 and change nothing; the "
              "server's own origin is admitted");
}

}  // namespace

void add_serve_checks(Registry& r) {
  add(r, {"H1", "serve_requires_token", "tycli serve on loopback refuses every request without its token, changing "
                                        "and revealing nothing", token_required});
  add(r, {"H2", "serve_refuses_foreign_origin_host", "tycli serve refuses requests whose Origin or Host is not its "
                                                     "own (DNS rebinding)", origin_and_host_checked});
}

}  // namespace taskyon::diagnostics
