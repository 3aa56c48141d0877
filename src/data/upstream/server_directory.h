// ServerDirectory: the addresses each [[upstream]] server given by DNS name
// resolves to now, written by the control thread's UpstreamResolver and
// read by every worker (one resolution per process, not per worker).
// Keyed by the server as configured, "name:port". A name that was never
// resolved has no entry; one that stops resolving keeps its last addresses
// (the resolver never publishes an empty set: "0 answers" is not "0
// servers"). version() moves with every change, so a worker learns that
// something changed with one load (Worker::on_inbox then refreshes its
// groups: UpstreamGroup::refresh_servers).
// Thread affinity: any thread (a mutex around the map; readers copy out a
// shared_ptr to an immutable vector).
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tlsfront::upstream {

struct ResolvedAddress {
  sockaddr_storage addr{};
  std::string text;  // "10.0.0.7:8080", "[fd00::7]:8080"
  bool operator==(const ResolvedAddress& o) const { return text == o.text; }
};
using AddressList = std::vector<ResolvedAddress>;  // sorted by text, no duplicates

class ServerDirectory {
 public:
  // Replaces the addresses of `key` with `addresses` (non-empty, sorted);
  // version() moves when they differ from what was there. Returns whether
  // they did.
  bool publish(const std::string& key, AddressList addresses);
  // The addresses of `key`, or null when it was never resolved.
  std::shared_ptr<const AddressList> lookup(const std::string& key) const;
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const AddressList>> map_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace tlsfront::upstream
