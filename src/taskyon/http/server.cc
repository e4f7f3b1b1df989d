#include "taskyon/http/server.h"

#include "taskyon/base/escape.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "taskyon/base/ascii.h"

namespace taskyon::http {

namespace {

using ascii::iequals;

constexpr std::string_view kPagePath = "/page/";  // page.h: /page/TOKEN/REL

void set_error(httplib::Response& res, int status, std::string_view code, std::string_view message) {
  const Response r = Response::error(status, code, message);
  res.status = r.status;
  res.set_content(r.body, r.content_type.c_str());
}

// The socket of this process connected from our `local_port` to the peer at
// `peer_addr`:`peer_port` (cpp-httplib 0.11.4 does not hand handlers their
// socket), or -1. The peer's address counts too: two loopback clients
// (127.0.0.1 and 127.0.0.2) may use the same port.
int find_connection(int local_port, const std::string& peer_addr, int peer_port) {
  in_addr want{};
  if (::inet_pton(AF_INET, peer_addr.c_str(), &want) != 1) return -1;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int fd = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{}) continue;
    sockaddr_in local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 || local.sin_family != AF_INET) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (ntohs(local.sin_port) == local_port && ntohs(peer.sin_port) == peer_port &&
        peer.sin_addr.s_addr == want.s_addr)
      return fd;
  }
  return -1;
}

}  // namespace

std::optional<std::string> Request::header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.name, name)) return h.value;
  return std::nullopt;
}

std::optional<std::string> Request::query_value(std::string_view name) const {
  for (const auto& q : query)
    if (q.name == name) return q.value;
  return std::nullopt;
}

namespace {

// The one thread that polls every ClientWatch. Made on first use and never
// destroyed (a detached thread waiting for work; nothing to join at exit).
// A new watch wakes it only when it is due before the thread's wait ends:
// with no watch left the thread still wakes every kIdleTick for kLinger, so
// that requests one after another (each adds a watch to an empty set) do not
// each wake it (issue 19: a futex wake and a context switch per request);
// after kLinger without a watch it waits until one is added.
class Watches {
 public:
  static Watches& instance() {
    static Watches* const watches = new Watches();
    return *watches;
  }

  std::uint64_t add(std::function<bool()> gone, std::function<void()> on_gone, std::chrono::milliseconds period) {
    std::lock_guard lock(mu_);
    if (!started_) {  // before the watch is added: if it throws, nothing is left behind
      std::thread poller([this] { run(); });
      // Named before add() returns: findable in /proc (tests, ps -L) at once.
      ::pthread_setname_np(poller.native_handle(), "taskyon-watch");
      poller.detach();
      started_ = true;
    }
    const std::uint64_t id = next_id_++;
    const auto due = Clock::now() + period;
    entries_.emplace(id, Entry{std::move(gone), std::move(on_gone), period, due, false});
    last_watch_ = due;
    if (due < waits_until_) cv_.notify_all();  // else it looks before then
    return id;
  }

  // Returns once the watch's functions do not run and never will again.
  void remove(std::uint64_t id) {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [&] { return polling_ != id; });
    entries_.erase(id);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kIdleTick{50};  // ClientWatch's default period
  static constexpr std::chrono::seconds kLinger{10};
  struct Entry {
    std::function<bool()> gone;
    std::function<void()> on_gone;
    std::chrono::milliseconds period;
    Clock::time_point due;
    bool left;  // on_gone was called: not polled again
  };

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      auto next = Clock::time_point::max();
      for (const auto& [_, e] : entries_)
        if (!e.left) next = std::min(next, e.due);
      const auto now = Clock::now();
      if (next == Clock::time_point::max() && now < last_watch_ + kLinger) next = now + kIdleTick;
      if (next == Clock::time_point::max()) {
        waits_until_ = next;
        cv_.wait(lock);
        waits_until_ = Clock::time_point::min();  // awake: it looks at entries_ before it waits again
        continue;
      }
      if (now < next) {
        waits_until_ = next;
        cv_.wait_until(lock, next);
        waits_until_ = Clock::time_point::min();
        continue;
      }
      // The first watch due. Its functions run unlocked (the /proc scan, the
      // cancel); remove() of this watch waits for them, other watches come
      // and go meanwhile (map nodes stay put).
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [&](const auto& kv) { return !kv.second.left && kv.second.due <= next; });
      if (it == entries_.end()) continue;
      const std::uint64_t id = it->first;
      Entry& e = it->second;
      polling_ = id;
      lock.unlock();
      const bool left = e.gone();
      if (left) e.on_gone();
      lock.lock();
      polling_ = 0;
      e.left = left;
      e.due = Clock::now() + e.period;
      idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;       // a watch was added: its due time may come first
  std::condition_variable idle_cv_;  // a watch's functions have returned
  std::map<std::uint64_t, Entry> entries_;
  std::uint64_t next_id_ = 1;
  std::uint64_t polling_ = 0;  // the watch whose functions run now, 0 for none
  bool started_ = false;
  Clock::time_point waits_until_ = Clock::time_point::min();  // when the thread's wait ends; min: not waiting
  Clock::time_point last_watch_ = Clock::time_point::min();   // the due time of the last watch added
};

}  // namespace

ClientWatch::ClientWatch(std::function<bool()> client_gone, std::function<void()> on_gone,
                         std::chrono::milliseconds period)
    : id_(Watches::instance().add(std::move(client_gone), std::move(on_gone), period)) {}

ClientWatch::~ClientWatch() { Watches::instance().remove(id_); }

Response Response::empty(int status) {
  Response r;
  r.status = status;
  return r;
}

Response Response::json(int status, const json::Value& value) {
  Response r;
  r.status = status;
  // The same JSON with C1 controls and bidi format characters escaped (base/escape.h): an
  // answer shown by curl on a terminal carries no tool-made escape sequence.
  r.body = escape_json_dump(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return r;
}

Response Response::error(int status, std::string_view code, std::string_view message) {
  return json(status, {{"error", {{"code", code}, {"message", message}}}});
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view scheme = "bearer ";
  if (token.empty() || authorization.size() != scheme.size() + token.size()) return false;
  if (!iequals(authorization.substr(0, scheme.size()), scheme)) return false;
  return CRYPTO_memcmp(authorization.data() + scheme.size(), token.data(), token.size()) == 0;
}

Result<std::string> new_token() {
  unsigned char bytes[32];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(Errc::io, fmt::format("getrandom failed: {}", std::strerror(errno)));
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

Result<void> write_token_file(const std::string& path, std::string_view token) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // A fresh file beside the target, renamed over it: a reader never sees a
  // half-written token, and a symlink at `path` is replaced, never followed.
  const std::string temporary = fmt::format("{}.{}.tmp", path, ::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return fail(Errc::io, fmt::format("cannot create the token file {}: {}", temporary, std::strerror(errno)), path);
  const std::string line = std::string(token) + "\n";
  const bool written = ::fchmod(fd, 0600) == 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int saved = errno;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int why = written ? errno : saved;
    ::unlink(temporary.c_str());
    return fail(Errc::io, fmt::format("cannot write the token file {}: {}", path, std::strerror(why)), path);
  }
  return {};
}

void remove_token_file(const std::string& path, std::string_view token) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  const std::string expected = std::string(token) + "\n";
  std::string held(expected.size() + 1, '\0');  // one byte more: a longer file is not ours
  const ssize_t n = ::read(fd, held.data(), held.size());
  ::close(fd);
  if (n == static_cast<ssize_t>(expected.size()) && held.compare(0, expected.size(), expected) == 0)
    ::unlink(path.c_str());
}

namespace {

// Debian's cpp-httplib is a compiled library that listens with a backlog of 5.
// More connections arriving at once than that overflow the accept queue; the
// kernel then answers with SYN cookies, and a cookie that fails its check is
// answered with a reset: the client's request is lost without an answer (24
// concurrent POSTs lost one in five runs). listen() on a socket that is already
// listening sets its backlog anew (Linux inet_listen); SOMAXCONN is capped by
// net.core.somaxconn.
Result<void> widen_backlog(int listener, int port) {
  sockaddr_in local{};
  socklen_t length = sizeof local;
  int listening = 0;
  socklen_t size = sizeof listening;
  if (listener < 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
      local.sin_family != AF_INET || ntohs(local.sin_port) != port ||
      ::getsockopt(listener, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening != 1)
    return fail(Errc::io, fmt::format("cannot find the listening socket of 127.0.0.1:{}", port));
  if (::listen(listener, SOMAXCONN) != 0)
    return fail(Errc::io, fmt::format("cannot widen the listen backlog of 127.0.0.1:{}: {}", port, std::strerror(errno)));
  return {};
}

}  // namespace

struct Server::Impl {
  Options options;
  httplib::Server server;
  int port = 0;
  int listener = -1;  // the listening socket, as cpp-httplib made it (bind() widens its backlog)
  std::atomic<bool> stopped{false};
  std::atomic<bool> entered{false};  // run() was called
  std::atomic<bool> done{false};     // run() returned

  // H2: the Host and Origin values this server answers to.
  bool own_host(std::string_view host) const {
    return iequals(host, fmt::format("127.0.0.1:{}", port)) || iequals(host, fmt::format("localhost:{}", port));
  }
  bool own_origin(std::string_view origin) const {
    return iequals(origin, fmt::format("http://127.0.0.1:{}", port)) ||
           iequals(origin, fmt::format("http://localhost:{}", port));
  }

  httplib::Server::HandlerResponse admit(const httplib::Request& req, httplib::Response& res) const {
    using R = httplib::Server::HandlerResponse;
    res.set_header("Cache-Control", "no-store");
    const auto refuse = [&](int status, std::string_view code, std::string_view message) {
      set_error(res, status, code, message);
      res.set_header("Connection", "close");  // an unread body must not be parsed as the next request
      return R::Handled;
    };
    if (!req.has_header("Host") || req.get_header_value_count("Host") != 1 || !own_host(req.get_header_value("Host")))
      return refuse(403, "forbidden_host",
                    "H2: the Host header must name this server (127.0.0.1:PORT or localhost:PORT)");
    if (req.has_header("Origin") &&
        (req.get_header_value_count("Origin") != 1 || !own_origin(req.get_header_value("Origin"))))
      return refuse(403, "forbidden_origin", "H2: requests from another origin are refused");
    // H1 for the page (page.h): a load under /page/TOKEN/ carries the token in
    // its path, since a browser cannot add a header to it; only that token
    // counts there, and only GET/HEAD read it.
    if (req.path.starts_with(kPagePath)) {
      const std::string_view rest = std::string_view(req.path).substr(kPagePath.size());
      const std::size_t slash = rest.find('/');
      if (slash == std::string_view::npos || slash != options.token.size() ||
          CRYPTO_memcmp(rest.data(), options.token.data(), slash) != 0)
        return refuse(401, "unauthorized", "H1: this page URL does not carry the server's token");
      if (req.method != "GET" && req.method != "HEAD")
        return refuse(405, "method_not_allowed", "the page is read with GET only");
      return R::Unhandled;
    }
    if (req.get_header_value_count("Authorization") != 1 ||
        !bearer_matches(req.get_header_value("Authorization"), options.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      return refuse(401, "unauthorized", "H1: send the token of the server's token file as `Authorization: Bearer TOKEN`");
    }
    return R::Unhandled;
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { stop(); }

Result<std::unique_ptr<Server>> Server::bind(Options options) {
  if (options.token.empty()) return fail(Errc::bad_usage, "the server needs a token (H1)");
  if (options.port < 0 || options.port > 65535) return fail(Errc::bad_usage, "the port must be 0..65535", "--port");
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  auto& s = impl->server;
  const std::size_t threads = impl->options.threads == 0 ? 1 : impl->options.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(impl->options.max_body_bytes);
  s.set_read_timeout(impl->options.read_timeout);
  s.set_write_timeout(impl->options.write_timeout);
  s.set_keep_alive_timeout(5);
  // cpp-httplib closes a keep-alive connection after 5 requests by default:
  // a client then reconnects every 5 calls (a profile of /v1/call showed one
  // accept per 5 requests). 100 keeps that off the call path while a
  // connection still gives its worker up now and then (Options::threads).
  s.set_keep_alive_max_count(100);
  s.set_tcp_nodelay(true);
  Impl* self = impl.get();
  s.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) { return self->admit(req, res); });
  // Bodies for errors the library decides (404, 413, 400): ours, in our shape.
  s.set_error_handler(httplib::Server::HandlerWithResponse([self](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    switch (res.status) {
      case 404: set_error(res, 404, "not_found", "no such endpoint (docs/serve.md)"); break;
      case 413:
        // cpp-httplib caps form bodies at 8 KiB before ours applies: curl -d sends one unless told.
        if (req.get_header_value("Content-Type").starts_with("application/x-www-form-urlencoded"))
          set_error(res, 413, "too_large",
                    "a form-encoded body is at most 8192 bytes: send JSON with Content-Type: application/json");
        else
          set_error(res, 413, "too_large", fmt::format("request bodies are at most {} bytes", self->options.max_body_bytes));
        break;
      default: set_error(res, res.status, "bad_request", "the request could not be read"); break;
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    set_error(res, 500, "internal", "unexpected failure in the server");
  });
  // The listening socket gets SO_REUSEADDR (a restarted server binds over its old
  // connections in TIME_WAIT) and nothing else: not SO_REUSEPORT, with which another
  // process could bind the same port and be handed some of its connections.
  s.set_socket_options([self](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    self->listener = sock;
  });
  if (impl->options.port == 0) {
    impl->port = s.bind_to_any_port("127.0.0.1");
    if (impl->port <= 0) return fail(Errc::io, "cannot bind a port on 127.0.0.1");
  } else {
    if (!s.bind_to_port("127.0.0.1", impl->options.port))
      return fail(Errc::io, fmt::format("cannot bind 127.0.0.1:{} (in use?)", impl->options.port), "--port");
    impl->port = impl->options.port;
  }
  if (auto widened = widen_backlog(impl->listener, impl->port); !widened) return std::unexpected(widened.error());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }
std::string Server::url() const { return fmt::format("http://127.0.0.1:{}", impl_->port); }

void Server::handle(std::string_view method, const std::string& pattern, Handler handler) {
  auto wrapped = [handler = std::move(handler), local_port = impl_->port](const httplib::Request& req,
                                                                          httplib::Response& res) {
    Request r;
    r.method = req.method;
    r.path = req.path;
    for (std::size_t i = 1; i < req.matches.size(); ++i) r.params.push_back(req.matches[i].str());
    for (const auto& [k, v] : req.params) r.query.push_back({k, v});
    for (const auto& [k, v] : req.headers) r.headers.push_back({k, v});
    r.body = req.body;
    // Found when first asked (most handlers never ask); the connection lives
    // while the handler runs, so the descriptor is not reused under it.
    r.client_gone = [local = local_port, addr = req.remote_addr, peer = req.remote_port, fd = -1]() mutable {
      if (fd < 0) fd = find_connection(local, addr, peer);  // not found: tried again next time
      if (fd < 0) return false;
      pollfd p{fd, POLLRDHUP, 0};
      return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    };
    Response out = handler(r);
    res.status = out.status;
    for (const auto& h : out.headers) res.set_header(h.name.c_str(), h.value);
    if (!out.stream) return res.set_content(out.body, out.content_type.c_str());
    res.set_chunked_content_provider(out.content_type, [stream = std::move(out.stream)](std::size_t, httplib::DataSink& sink) {
      bool gone = false;
      stream([&](std::string_view piece) {
        if (gone) return false;
        if (piece.empty()) return true;
        gone = !sink.write(piece.data(), piece.size());
        return !gone;
      });
      if (gone) return false;  // the connection is dropped, not ended cleanly
      sink.done();
      return true;
    });
  };
  auto& s = impl_->server;
  if (method == "GET") s.Get(pattern, wrapped);
  else if (method == "POST") s.Post(pattern, wrapped);
  else if (method == "DELETE") s.Delete(pattern, wrapped);
  else if (method == "PUT") s.Put(pattern, wrapped);
  else if (method == "OPTIONS") s.Options(pattern, wrapped);
}

void Server::run() {
  impl_->entered.store(true);
  if (!impl_->stopped.load()) impl_->server.listen_after_bind();
  impl_->done.store(true);
}

void Server::stop() {
  impl_->stopped.store(true);
  // httplib's stop() does nothing until the listener runs: a stop() that
  // races run()'s start waits (at most 1 s) for it, so run() always ends.
  for (int i = 0; i < 100 && impl_->entered.load() && !impl_->done.load() && !impl_->server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  impl_->server.stop();
}

}  // namespace taskyon::http
