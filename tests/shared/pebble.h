// Pebble: Debian's pebble (a small RFC 8555 ACME CA for tests) and
// pebble-challtestsrv (here only its DNS server, answering every A query
// with 127.0.0.1 and no AAAA) on free loopback ports, in the test's
// directory; pebble's HTTPS with a certificate for 127.0.0.1 the caller
// names (the test PKI's localhost chain: clients trust its root), its
// validation of HTTP-01 on http_port() and
// TLS-ALPN-01 on tls_port() of 127.0.0.1. Both stopped by PID (stop(), or
// the destructor). Tests skip when pebble is not installed.
#pragma once

#include <string>

#include "shared/process.h"

namespace tlsfront::itest {

class Pebble {
 public:
  // `chain`, `key`: PEM files of pebble's HTTPS certificate.
  Pebble(const TempDir& dir, std::string chain, std::string key)
      : dir_(dir), chain_(std::move(chain)), key_(std::move(key)) {}
  ~Pebble() { stop(); }
  Pebble(const Pebble&) = delete;
  Pebble& operator=(const Pebble&) = delete;

  static bool installed();
  // Before start(): the lifetime of the certificates pebble issues (its
  // certificateValidityPeriod; 0 = pebble's default, years).
  void set_validity(int seconds) { validity_ = seconds; }
  // Before start(): accounts need External Account Binding with this key
  // id and base64url MAC key (RFC 8555 §7.3.4).
  void require_eab(std::string kid, std::string mac_key) {
    eab_kid_ = std::move(kid);
    eab_key_ = std::move(mac_key);
  }
  // True once the directory answers; false (with a gtest failure naming
  // stderr) otherwise.
  bool start();
  void stop();
  std::string directory_url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/dir"; }
  int http_port() const { return http_port_; }
  int tls_port() const { return tls_port_; }
  // The management interface (https; GET /roots/0 is the PEM root pebble
  // made at start, which its chains lead to).
  int management_port() const { return management_port_; }
  // pebble's own log (orders, validations).
  std::string log() const { return pebble_.err() + pebble_.out(); }

 private:
  const TempDir& dir_;
  std::string chain_, key_, eab_kid_, eab_key_;
  Process pebble_, dns_;
  int port_ = 0, http_port_ = 0, tls_port_ = 0, validity_ = 0, management_port_ = 0;
};

}  // namespace tlsfront::itest
