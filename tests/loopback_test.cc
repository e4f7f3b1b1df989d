// The loopback HTTPS test server (loopback/loopback.h): its certificates verify
// for exactly the names they claim, the Node child starts, answers and is gone
// after the destructor.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <memory>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "taskyon/capability/fetch.h"
#include "taskyon/loopback/loopback.h"
#include "test_util.h"

namespace taskyon::loopback {
namespace {

using taskyon::testing::TempDir;

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr read_pem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return X509Ptr(cert);
}

// True when `leaf` chains to `ca` for TLS server use.
bool verifies(X509* ca, X509* leaf) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

TEST(Loopback, CertificatesVerifyForTheirNamesOnly) {
  auto certs = make_certificates("fetch.loopback.test");
  ASSERT_TRUE(certs) << certs.error().describe();
  auto ca = read_pem(certs->ca_pem);
  auto leaf = read_pem(certs->cert_pem);
  ASSERT_TRUE(ca && leaf);
  EXPECT_TRUE(verifies(ca.get(), leaf.get()));
  EXPECT_EQ(X509_check_ip_asc(leaf.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(leaf.get(), "fetch.loopback.test", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(leaf.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(leaf.get(), "example.com", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_ip_asc(leaf.get(), "127.0.0.2", 0), 1);
  EXPECT_NE(X509_check_ca(leaf.get()), 1);  // the leaf cannot sign

  // Another run's CA does not vouch for this leaf.
  auto other = make_certificates("fetch.loopback.test");
  ASSERT_TRUE(other);
  EXPECT_FALSE(verifies(read_pem(other->ca_pem).get(), leaf.get()));
}

TEST(Loopback, RefusesANameThatIsNotADnsName) {
  for (const char* bad : {"", "a b", "a..b", "x,DNS:evil.example", "bad/name"}) {
    auto certs = make_certificates(bad);
    ASSERT_FALSE(certs) << bad;
    EXPECT_EQ(certs.error().code, Errc::bad_usage);
  }
}

TEST(Loopback, ServerAnswersAndIsReapedByTheDestructor) {
  TempDir dir;
  ServerOptions options;
  options.dir = dir.path();
  auto started = HttpsServer::start(options);
  ASSERT_TRUE(started) << started.error().describe();
  std::unique_ptr<HttpsServer> server = std::move(*started);
  const pid_t pid = server->pid();
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(kill(pid, 0), 0);
  EXPECT_TRUE(std::filesystem::exists(server->ca_file()));

  capability::FetchContext c;
  c.rules.allow = {*capability::Cidr::parse("127.0.0.1/32")};
  c.rules.ca_file = server->ca_file().string();
  c.grant = [](std::string_view, capability::Access) { return std::optional<capability::FetchLimits>(capability::FetchLimits{}); };
  auto ok = capability::fetch({.url = server->url("/ok"), .method = "GET", .headers = {}, .body = {}}, c);
  ASSERT_TRUE(ok.response) << ok.response.error().message;
  EXPECT_EQ(ok.response->status, 200);
  auto missing = capability::fetch({.url = server->url("/nope"), .method = "GET", .headers = {}, .body = {}}, c);
  ASSERT_TRUE(missing.response);
  EXPECT_EQ(missing.response->status, 404);
  auto count = capability::fetch({.url = server->url("/count"), .method = "GET", .headers = {}, .body = {}}, c);
  ASSERT_TRUE(count.response);
  EXPECT_EQ(nlohmann::json::parse(count.response->body).at("requests"), 2);  // /ok and /nope

  server.reset();
  errno = 0;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);  // already reaped: not our child any more
  EXPECT_EQ(errno, ECHILD);
  EXPECT_EQ(kill(pid, 0), -1);
}

TEST(Loopback, MissingNodeIsRuntimeMissing) {
  TempDir dir;
  ServerOptions options;
  options.dir = dir.path();
  options.node = (dir.path() / "no-such-node").string();
  auto started = HttpsServer::start(options);
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, Errc::runtime_missing);
}

}  // namespace
}  // namespace taskyon::loopback
