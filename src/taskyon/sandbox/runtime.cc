#include "taskyon/sandbox/runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

#include "taskyon/sandbox/guest.h"
#include "taskyon/sandbox/protocol.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::sandbox {

namespace fs = std::filesystem;

namespace {

// Where the npm package `deno` puts its platform binary (its optional
// dependency @deno/linux-x64-glibc, or linux-arm64-glibc), relative to a
// project root.
#if defined(__aarch64__)
#define TASKYON_DENO_PACKAGE "node_modules/@deno/linux-arm64-glibc/deno"
#else
#define TASKYON_DENO_PACKAGE "node_modules/@deno/linux-x64-glibc/deno"
#endif
constexpr const char* kDenoPackageBinary = TASKYON_DENO_PACKAGE;
// Where `make install` (CMakeLists.txt) puts that binary, relative to the prefix.
constexpr const char* kDenoInstalled = "lib/taskyon/deno";

const char* const kDenoInstall =
    "Deno runs tool code only when selected and installed. In the Taskyon repository `npm ci` (scripts/setup.sh "
    "runs it) brings " TASKYON_DENO_PACKAGE ", and `make install` copies it next to tycli "
    "(PREFIX/lib/taskyon/deno); or put a `deno` executable on PATH, or give its path (\"denoPath\" in "
    "$TASKYON_HOME/config.json); or select Node (--js-runtime node)";

// A regular file we may execute that starts with the ELF magic (not a script shim).
bool is_elf_executable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// The directory of the running executable, or empty.
fs::path own_directory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

std::string normal(const fs::path& path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  return (ec ? path.lexically_normal() : canonical).string();
}

}  // namespace

std::string_view js_runtime_name(JsRuntime runtime) { return runtime == JsRuntime::deno ? "deno" : "node"; }

std::optional<JsRuntime> parse_js_runtime(std::string_view name) {
  if (name == "node") return JsRuntime::node;
  if (name == "deno") return JsRuntime::deno;
  return std::nullopt;
}

Result<RuntimeLocation> find_deno(std::string_view configured) {
  if (!configured.empty()) {
    std::error_code ec;
    const fs::path path = fs::absolute(std::string(configured), ec);
    if (!ec && is_elf_executable(path.string())) {
      return RuntimeLocation{JsRuntime::deno, path.lexically_normal().string(), "configured"};
    }
    return fail(Errc::runtime_missing,
                fmt::format("Deno was not found: {} is not an executable file. {}", configured, kDenoInstall),
                std::string(configured));
  }
  if (auto found = find_on_path("deno", is_elf_executable)) return RuntimeLocation{JsRuntime::deno, *found, "PATH"};
  // Relative to tycli's own executable: PREFIX/bin/tycli of an install, then
  // build/tycli and build/tests/taskyon_tests (or build/bench/…) in the repository.
  std::vector<std::pair<fs::path, const char*>> candidates;
  if (const fs::path dir = own_directory(); !dir.empty()) {
    candidates.emplace_back(dir / ".." / kDenoInstalled, "tycli's install");
    candidates.emplace_back(dir / ".." / kDenoPackageBinary, "project install");
    candidates.emplace_back(dir / ".." / ".." / kDenoPackageBinary, "project install");
  }
  std::string looked;
  for (const auto& [candidate, source] : candidates) {
    if (is_elf_executable(candidate.string())) return RuntimeLocation{JsRuntime::deno, normal(candidate), source};
    looked += (looked.empty() ? "" : ", ") + candidate.lexically_normal().string();
  }
  const char* env_path = std::getenv("PATH");
  return fail(Errc::runtime_missing,
              fmt::format("Deno was not found: no executable `deno` on PATH ({}) nor at {}. {}",
                          env_path ? env_path : "/usr/local/bin:/usr/bin:/bin", looked,
                          kDenoInstall),
              "deno");
}

Result<RuntimeLocation> locate_runtime(const RuntimeConfig& config) {
  if (config.runtime == JsRuntime::deno) return find_deno(config.deno_path);
  auto node = find_node(config.node_path);
  if (!node) return std::unexpected(std::move(node.error()));
  return RuntimeLocation{JsRuntime::node, std::move(*node), config.node_path.empty() ? "PATH" : "configured"};
}

std::vector<std::string> deno_argv(const std::string& deno, const RuntimeConfig& config) {
  // The harness as a base64 data: URL (a data: entry module needs no read
  // permission and no file). Base64 by hand: no allocation-heavy helper needed.
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string_view harness = guest::deno_harness();
  std::string url = "data:text/javascript;base64,";
  url.reserve(url.size() + (harness.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < harness.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, harness.size() - i);
    std::uint32_t v = static_cast<unsigned char>(harness[i]) << 16;
    if (n > 1) v |= static_cast<unsigned char>(harness[i + 1]) << 8;
    if (n > 2) v |= static_cast<unsigned char>(harness[i + 2]);
    url += kAlphabet[(v >> 18) & 63];
    url += kAlphabet[(v >> 12) & 63];
    url += n > 1 ? kAlphabet[(v >> 6) & 63] : '=';
    url += n > 2 ? kAlphabet[v & 63] : '=';
  }
  return {
      deno,
      "run",
      "--no-prompt",
      "--no-config",
      "--no-lock",
      "--no-remote",
      "--no-npm",
      "--cached-only",
      "--deny-import",
      fmt::format("--v8-flags=--max-old-space-size={}", config.heap_limit_mb),
      std::move(url),
      std::to_string(config.max_frame_bytes),
      std::to_string(config.max_log_bytes),
      std::to_string(protocol::kMaxDepth),
  };
}

Result<void> check_deno_argv(const std::vector<std::string>& argv) {
  if (argv.size() < 2 || argv[1] != "run") {
    return fail(Errc::internal, "refusing to start Deno: its subcommand must be `run`", argv.size() > 1 ? argv[1] : "");
  }
  for (std::size_t i = 2; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (!arg.starts_with("-")) break;  // the entry module: what follows are the harness's own arguments
    bool grants = arg.starts_with("--allow-") || arg == "--allow" || arg.starts_with("--permission-set") ||
                  arg == "--all" || arg.starts_with("-P");
    if (!grants && !arg.starts_with("--")) {  // a cluster of short flags, e.g. -qA
      grants = arg.find_first_of("AP", 1) != std::string::npos;
    }
    if (grants) {
      return fail(Errc::internal, fmt::format("refusing to start Deno with a permission flag ({})", arg), arg);
    }
  }
  return {};
}

std::vector<std::string> deno_env(const std::string& deno_dir) {
  return {"DENO_DIR=" + deno_dir, "DENO_NO_UPDATE_CHECK=1", "DENO_NO_PACKAGE_JSON=1", "NO_COLOR=1"};
}

Result<std::shared_ptr<const hardening::Policy>> deno_policy(const std::string& deno, const hardening::Layers& layers) {
  static std::mutex mu;
  static std::map<std::pair<std::string, hardening::Layers>, std::shared_ptr<const hardening::Policy>> cache;
  std::lock_guard lock(mu);
  auto key = std::pair{deno, layers};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // seccomp stays as for Node but for one exception: tokio's signal driver makes
  // a socketpair(AF_UNIX, SOCK_STREAM) at start and Deno panics without it.
  auto policy = hardening::Policy::prepare(deno, {}, layers, {.unix_stream_socketpair = true});
  if (!policy) return policy;
  cache.emplace(std::move(key), *policy);
  return *policy;
}

hardening::rlimits::Limits deno_limits(const RuntimeConfig& config) {
  const std::uint64_t heap_mb = config.heap_limit_mb > 0 ? static_cast<std::uint64_t>(config.heap_limit_mb) : 0;
  return {.data_bytes = (heap_mb + kDenoOffHeapMb) << 20, .open_files = 256};
}

Result<Launch> prepare_launch(const std::string& executable, const RuntimeConfig& config, const std::string& workdir) {
  if (config.runtime == JsRuntime::node) {
    auto policy = node_policy(executable, config.layers);
    if (!policy) return std::unexpected(std::move(policy.error()));
    return Launch{std::move(*policy), node_argv(executable, config), {}, node_limits(config)};
  }
  auto policy = deno_policy(executable, config.layers);
  if (!policy) return std::unexpected(std::move(policy.error()));
  Launch launch{std::move(*policy), deno_argv(executable, config), deno_env(workdir + "/deno"), deno_limits(config)};
  if (auto checked = check_deno_argv(launch.argv); !checked) return std::unexpected(std::move(checked.error()));
  return launch;
}

std::string config_file_path() {
  fs::path home;
  if (const char* t = std::getenv("TASKYON_HOME"); t && *t) {
    home = t;
  } else if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) {
    home = fs::path(x) / "taskyon";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    home = fs::path(h) / ".local" / "share" / "taskyon";
  } else {
    return {};
  }
  return (home / "config.json").string();
}

Result<RuntimeChoice> read_runtime_choice(const std::string& config_file) {
  RuntimeChoice choice;
  if (config_file.empty()) return choice;
  std::error_code ec;
  if (!fs::exists(config_file, ec)) return choice;
  std::ifstream in(config_file, std::ios::binary);
  if (!in) return fail(Errc::io, "cannot read the config file", config_file);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto parsed = json::parse(text);
  if (!parsed) return fail(Errc::invalid_json, parsed.error().message, config_file);
  if (!parsed->is_object()) return fail(Errc::bad_usage, "the config file must hold a JSON object", config_file);
  // A key this tycli does not know is refused, never ignored (issue 16): a
  // typo would otherwise silently leave the default in force.
  for (const auto& [key, value] : parsed->items()) {
    if (std::find(kConfigKeys.begin(), kConfigKeys.end(), key) == kConfigKeys.end()) {
      std::string known;
      for (const auto k : kConfigKeys) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", k);
      return fail(Errc::bad_usage,
                  fmt::format("the config file has an unknown key {}; the known keys are {}",
                              json::Value(key).dump(-1, ' ', true), known),
                  config_file);
    }
  }
  if (auto it = parsed->find("nodePath"); it != parsed->end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      return fail(Errc::bad_usage, "\"nodePath\" must be the path of a node executable", config_file);
    choice.node_path = it->get<std::string>();
  }
  if (auto it = parsed->find("timeout"); it != parsed->end()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0 || it->get<std::uint64_t>() > kMaxConfigTimeoutMs)
      return fail(Errc::bad_usage,
                  fmt::format("\"timeout\" must be a whole number of milliseconds from 1 to {}, not {}",
                              kMaxConfigTimeoutMs, it->dump()),
                  config_file);
    choice.timeout_ms = static_cast<long long>(it->get<std::uint64_t>());
  }
  if (auto it = parsed->find("pythonIsolation"); it != parsed->end()) {
    if (!it->is_string() || (it->get<std::string>() != "strict" && it->get<std::string>() != "host"))
      return fail(Errc::bad_usage,
                  fmt::format("\"pythonIsolation\" must be \"strict\" or \"host\", not {}", it->dump()),
                  config_file);
    choice.python_isolation = it->get<std::string>();
  }
  if (auto it = parsed->find("jsRuntime"); it != parsed->end()) {
    const auto runtime = it->is_string() ? parse_js_runtime(it->get<std::string>()) : std::nullopt;
    if (!runtime) {
      return fail(Errc::bad_usage, fmt::format("\"jsRuntime\" must be \"node\" or \"deno\", not {}", it->dump()),
                  config_file);
    }
    choice.runtime = runtime;
  }
  if (auto it = parsed->find("denoPath"); it != parsed->end()) {
    if (!it->is_string()) return fail(Errc::bad_usage, "\"denoPath\" must be a string", config_file);
    choice.deno_path = it->get<std::string>();
  }
  if (auto it = parsed->find("sandboxMemoryBudgetMiB"); it != parsed->end()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > kMaxMemoryBudgetMib)
      return fail(Errc::bad_usage,
                  fmt::format("\"sandboxMemoryBudgetMiB\" must be a whole number of MiB from 0 (no budget) to {}, "
                              "not {}",
                              kMaxMemoryBudgetMib, it->dump()),
                  config_file);
    choice.memory_budget_mib = it->get<std::uint64_t>();
  }
  return choice;
}

Result<void> select_runtime(RuntimeConfig& config, std::string_view flag, const std::string& config_file) {
  auto choice = read_runtime_choice(config_file);
  if (!choice) return std::unexpected(std::move(choice.error()));
  if (!choice->deno_path.empty() && config.deno_path.empty()) config.deno_path = choice->deno_path;
  if (!choice->node_path.empty() && config.node_path.empty()) config.node_path = choice->node_path;
  if (choice->memory_budget_mib) config.memory_budget_bytes = *choice->memory_budget_mib << 20;
  if (!flag.empty()) {
    const auto runtime = parse_js_runtime(flag);
    if (!runtime) {
      return fail(Errc::bad_usage, fmt::format("--js-runtime must be node or deno, not {}", flag), "--js-runtime");
    }
    config.runtime = *runtime;
  } else if (choice->runtime) {
    config.runtime = *choice->runtime;
  }
  return {};
}

}  // namespace taskyon::sandbox
