// The HTTP transport of `tycli serve` (DESIGN §8, H1, H2; docs/serve.md), on
// Debian's cpp-httplib (never a hand-written parser). It owns the rules every
// request passes before any handler sees it, in this order:
//   H2  `Host` must be the server's own ("127.0.0.1:PORT" or "localhost:PORT");
//       an `Origin`, when present, must be "http://127.0.0.1:PORT" or
//       "http://localhost:PORT" (no DNS rebinding of a local server)  -> 403 forbidden_origin / forbidden_host
//   H1  `Authorization: Bearer TOKEN`, compared in constant time        -> 401 unauthorized
//       (under /page/: the token in the path instead, GET/HEAD only, page.h) -> 401 / 405
//   size a body over Options::max_body_bytes                              -> 413 too_large
// A refused request reaches no handler: it changes nothing and its answer
// names only the rule. Unknown paths are 404 not_found. Error bodies are
// {"error":{"code","message"}} like every /v1 error.
// The listener is loopback only (127.0.0.1); cpp-httplib 0.11.4 has no
// AF_UNIX server, so there is no unix-socket listener (docs/serve.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::http {

struct Header {
  std::string name, value;
};

struct Request {
  std::string method;                // "GET", "POST", …
  std::string path;                  // decoded, without the query
  std::vector<std::string> params;   // the route pattern's capture groups, in order
  std::vector<Header> query;         // decoded query parameters, in order
  std::vector<Header> headers;       // as received
  std::string body;                  // at most Options::max_body_bytes
  // Whether the client has closed its connection (its socket polled for
  // POLLRDHUP, without waiting); false when that cannot be told. A client
  // that half-closes (shutdown(SHUT_WR)) after its request counts as gone.
  // Set by the server; handlers that run long poll it (or use ClientWatch)
  // to stop work nobody will read. Linux only: cpp-httplib 0.11.4 does not
  // hand handlers their socket, so the first call finds it among
  // /proc/self/fd by its local and peer address and port (one
  // getsockname/getpeername per descriptor), later calls poll the one found;
  // a lookup that finds nothing is tried again next time. One thread at a
  // time (it caches the descriptor).
  std::function<bool()> client_gone = [] { return false; };
  // The first header / query parameter of that name (headers: ASCII case-insensitive).
  std::optional<std::string> header(std::string_view name) const;
  std::optional<std::string> query_value(std::string_view name) const;
};

// While it lives, polls `client_gone` every `period` and calls `on_gone` once
// when the client has left: a handler that runs a long call or fetch cancels
// it there. Every watch of the process is polled by one thread (issue 19: a
// thread per request cost each call a clone, a stack and its signal-mask
// calls), which also calls `on_gone`; both must be quick. The destructor
// returns once neither runs for this watch nor ever will, also during unwinding.
class ClientWatch {
 public:
  ClientWatch(std::function<bool()> client_gone, std::function<void()> on_gone,
              std::chrono::milliseconds period = std::chrono::milliseconds(50));
  ~ClientWatch();
  ClientWatch(const ClientWatch&) = delete;
  ClientWatch& operator=(const ClientWatch&) = delete;

 private:
  std::uint64_t id_;
};

// Writes one piece of a streamed body; false once the client is gone (the
// write failed), after which every write is false.
using StreamWrite = std::function<bool(std::string_view)>;

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<Header> headers;
  // When set, the body is not `body` but what this writes, sent chunked as it
  // is written (text/event-stream for MCP). It runs on the request's worker
  // thread after the handler returned, once; the response ends when it returns.
  std::function<void(const StreamWrite&)> stream;
  // A JSON document (one line).
  static Response json(int status, const json::Value& value);
  // {"error":{"code","message"}}.
  static Response error(int status, std::string_view code, std::string_view message);
  // No body: 202 Accepted (an MCP notification), 204 No Content.
  static Response empty(int status);
};

// Handlers run on the server's worker threads, several at once.
using Handler = std::function<Response(const Request&)>;

struct Options {
  int port = 0;                          // 0: the OS picks one (Server::port() says which)
  std::string token;                     // the bearer token every request must carry (H1); must not be empty
  std::size_t max_body_bytes = 8u << 20;  // request bodies, bytes
  std::chrono::seconds read_timeout{10};  // per read of a request (headers and body)
  std::chrono::seconds write_timeout{10};
  std::size_t threads = 8;               // worker threads (concurrent requests)
};

class Server {
 public:
  // Binds 127.0.0.1:port (SO_REUSEADDR, not SO_REUSEPORT; backlog SOMAXCONN).
  // Errc::bad_usage for an empty token or a port outside 0..65535; Errc::io
  // when the address cannot be bound.
  static Result<std::unique_ptr<Server>> bind(Options options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  std::string url() const;  // "http://127.0.0.1:PORT"

  // Routes METHOD requests whose whole path matches `pattern` (ECMAScript
  // regex). Register before run().
  void handle(std::string_view method, const std::string& pattern, Handler handler);

  // Serves until stop(); returns at once if stop() already ran.
  void run();
  // From any thread (a signal watcher): stops accepting, ends run().
  void stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// 32 bytes from getrandom(2), as 64 lowercase hex digits. Errc::io if the
// kernel gives none.
Result<std::string> new_token();

// Writes `token` and a newline to `path` with mode 0600, replacing a regular
// file there (never following a symlink). Errc::io naming the path.
Result<void> write_token_file(const std::string& path, std::string_view token);

// Removes the token file at `path` if it still holds `token` (as
// write_token_file wrote it); a file another server has written there since,
// with its own token, stays. Quietly does nothing if there is no such file.
// Not atomic: a file renamed there between the read and the unlink (two
// system calls) is removed.
void remove_token_file(const std::string& path, std::string_view token);

// Whether an Authorization header value is "Bearer TOKEN" (scheme
// case-insensitive) for exactly `token`, compared in constant time.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace taskyon::http
