// A real HTTPS server on 127.0.0.1 for tests and `tycli diagnostics`: a
// throw-away CA and server certificate made with the OpenSSL C API, and a Node
// child running https_server.js (embedded at build time). The fetch capability
// reaches it only through the test-only allow rule (capability/fetch.h,
// NetworkRules: allow 127.0.0.1/32, ca_file = ca_file()).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"

namespace taskyon::loopback {

// The route script, src/taskyon/loopback/https_server.js, byte for byte.
std::string_view https_server_js();

// PEM text of a fresh CA and a server certificate it signed (ECDSA P-256,
// SHA-256, valid from one hour ago for one day). The server certificate's
// subjectAltName is IP 127.0.0.1, DNS localhost and DNS `dns_name`;
// extendedKeyUsage serverAuth. The CA is basicConstraints CA:TRUE, pathlen 0.
struct Certificates {
  std::string ca_pem;    // the trust anchor (ca.pem)
  std::string cert_pem;  // the server certificate (cert.pem)
  std::string key_pem;   // the server's private key, PKCS #8 (key.pem)
};
// Errc::bad_usage when `dns_name` is empty or not a valid DNS name in ASCII;
// Errc::internal when OpenSSL fails.
Result<Certificates> make_certificates(std::string_view dns_name);

// Writes ca.pem, cert.pem and key.pem (mode 0600) into `dir`, which must exist. Errc::io.
Result<void> write_certificates(const Certificates& certs, const std::filesystem::path& dir);

struct ServerOptions {
  std::filesystem::path dir;                 // an existing directory: certificates, script, server.log
  std::string node;                          // the Node executable; empty: `node` on PATH (sandbox::find_node)
  std::string dns_name = "loopback.test";    // an extra name in the certificate, for resolver-pinned tests
  std::chrono::milliseconds start_timeout{15000};  // until the child reports its port
};

// One running server. The destructor SIGKILLs the child and reaps it; the
// child also exits by itself when this process dies (its stdin closes).
class HttpsServer {
 public:
  // Makes the certificates, writes them and the script into options.dir,
  // starts Node on 127.0.0.1 port 0 and reads the port it chose.
  // Errc::runtime_missing without Node; Errc::io or Errc::internal when the
  // child cannot start or does not report a port in time (the message quotes
  // the end of server.log).
  static Result<std::unique_ptr<HttpsServer>> start(const ServerOptions& options);

  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& ca_file() const { return ca_file_; }  // dir/ca.pem
  const std::string& dns_name() const { return dns_name_; }
  std::string origin() const;                        // "https://127.0.0.1:PORT"
  std::string url(std::string_view path) const;      // origin() + path ("/echo")
  std::string named_url(std::string_view path) const;  // "https://" + dns_name + ":PORT" + path

 private:
  HttpsServer() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;  // closing it ends the child
  std::uint16_t port_ = 0;
  std::filesystem::path ca_file_;
  std::string dns_name_;
};

}  // namespace taskyon::loopback
