// AcmeLock: the lock that lets one node of a region order and renew its
// ACME certificates at a time (control/acme_manager.h), with a lease and a
// fencing token, in the certificate store's Redis:
//
//   P:acme:fence:R   int     INCR'd by every acquisition: the fencing token
//   P:acme:lock:R    string  "<token>:<holder>", SET NX PX <lease>
//
// acquire() takes a new token, then SET NX PX; renew() extends the lease and
// release() deletes the key, both only while the key still holds this
// holder's value (compare-and-PEXPIRE / compare-and-DEL scripts). put()
// writes a certificate store entry with tls::kPutScript's rules (atomic,
// newer updated_at only) *and* only while the lock key holds this
// acquisition's value: a node that paused past its lease — the lock expired,
// maybe taken by another node with a larger token — cannot overwrite what
// the new holder wrote (the check and the write are one script).
//
// Errors: Errc::Io / Timeout / Upstream from redis::Client::call_blocking
// and error replies. Thread affinity: one thread at a time (the ACME
// thread); blocking calls, each bounded by the client's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "redis/client.h"
#include "tls/store_entry.h"
#include "util/result.h"

namespace tlsfront::control {

class AcmeLock {
 public:
  // `client` borrowed (call_blocking only). `holder`: this node's name in
  // the lock's value (host name and pid).
  AcmeLock(const redis::Client& client, std::string prefix, std::string region, std::string holder);
  ~AcmeLock();  // release() when held (best effort)

  // True when taken (held() until it expires or release()); false when
  // another holder has it.
  [[nodiscard]] Result<bool> acquire(std::chrono::milliseconds lease);
  // The lease extended; false when it was lost (expired, taken over).
  [[nodiscard]] Result<bool> renew(std::chrono::milliseconds lease);
  void release();
  bool held() const { return !value_.empty(); }
  uint64_t token() const { return token_; }

  // kPutScript fenced by this acquisition: 1 stored, 0 not newer than the
  // store's, -1 the lock is no longer ours (nothing written).
  [[nodiscard]] Result<long long> put(const tls::StoreEntry& entry);

  std::string lock_key() const;
  std::string fence_key() const;

 private:
  [[nodiscard]] Result<long long> eval(std::vector<std::string> cmd);

  const redis::Client& client_;
  const std::string prefix_, region_, holder_;
  std::string value_;  // "<token>:<holder>" while held
  uint64_t token_ = 0;
};

}  // namespace tlsfront::control
