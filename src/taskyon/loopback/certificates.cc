// The loopback server's throw-away PKI on the OpenSSL 3 C API (loopback.h).
#include <sys/stat.h>

#include <fstream>
#include <memory>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "taskyon/loopback/loopback.h"

namespace taskyon::loopback {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;
using Ext = std::unique_ptr<X509_EXTENSION, Free>;

std::string openssl_error(std::string_view what) {
  const unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return std::string(what) + ": " + buf;
}

bool valid_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || ++label > 63) return false;
  }
  return label > 0;
}

bool add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for `key`, named CN=`cn`, valid from an hour ago for a day.
Cert new_cert(EVP_PKEY* key, const std::string& cn) {
  Cert cert(X509_new());
  if (!cert) return nullptr;
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return nullptr;
  serial[0] &= 0x7f;  // positive (RFC 5280 §4.1.2.2)
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  const bool serial_ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const bool ok = serial_ok && X509_set_version(cert.get(), 2) == 1 &&
                  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) &&
                  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) &&
                  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) == 1 &&
                  X509_set_pubkey(cert.get(), key) == 1;
  return ok ? std::move(cert) : nullptr;
}

std::string pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string pem_key(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace

Result<Certificates> make_certificates(std::string_view dns_name) {
  if (!valid_dns_name(dns_name))
    return fail(Errc::bad_usage, "the loopback server's name must be an ASCII DNS name", std::string(dns_name));
  const std::string name(dns_name);

  Key ca_key(EVP_EC_gen("P-256"));
  Key server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return fail(Errc::internal, openssl_error("EC key generation failed"));

  Cert ca = new_cert(ca_key.get(), "Taskyon loopback test CA");
  if (!ca || X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())) != 1 ||
      !add_ext(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_ext(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_ext(ca.get(), ca.get(), NID_subject_key_identifier, "hash") ||
      X509_sign(ca.get(), ca_key.get(), EVP_sha256()) == 0)
    return fail(Errc::internal, openssl_error("making the test CA failed"));

  Cert server = new_cert(server_key.get(), name);
  const std::string san = "IP:127.0.0.1,DNS:localhost,DNS:" + name;
  if (!server || X509_set_issuer_name(server.get(), X509_get_subject_name(ca.get())) != 1 ||
      !add_ext(server.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !add_ext(server.get(), ca.get(), NID_key_usage, "critical,digitalSignature") ||
      !add_ext(server.get(), ca.get(), NID_ext_key_usage, "serverAuth") ||
      !add_ext(server.get(), ca.get(), NID_subject_alt_name, san.c_str()) ||
      !add_ext(server.get(), ca.get(), NID_authority_key_identifier, "keyid:always") ||
      X509_sign(server.get(), ca_key.get(), EVP_sha256()) == 0)
    return fail(Errc::internal, openssl_error("making the server certificate failed"));

  Certificates out{pem(ca.get()), pem(server.get()), pem_key(server_key.get())};
  if (out.ca_pem.empty() || out.cert_pem.empty() || out.key_pem.empty())
    return fail(Errc::internal, openssl_error("writing PEM failed"));
  return out;
}

Result<void> write_certificates(const Certificates& certs, const std::filesystem::path& dir) {
  for (const auto& [file, text] : {std::pair{"ca.pem", &certs.ca_pem}, std::pair{"cert.pem", &certs.cert_pem},
                                   std::pair{"key.pem", &certs.key_pem}}) {
    const auto path = dir / file;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << *text;
    out.close();
    if (!out || ::chmod(path.c_str(), 0600) != 0) return fail(Errc::io, "cannot write the certificate file", path.string());
  }
  return {};
}

}  // namespace taskyon::loopback
