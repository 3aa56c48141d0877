// RequestCounterTable: tlsfront_requests_total by listener, route, protocol
// and status class, for one layout of labels (one configuration's
// [[listen]] and [[route]] labels, config::Listener::label and
// config::Route::name). Each worker adds to its own block of counters (no
// map, no string on the request path: a request's slot is arithmetic on its
// listener's and route's indices); a scrape sums the blocks.
//
// Lifetime: built with a data::Generation (control/generation_builder.h) and
// shared by the generations that follow while their labels stay the same, so
// a reload that keeps the routes and listeners keeps the series going. A
// reload that changes them gets a new table whose series start from the old
// table's totals for the same labels (a label that is new starts at 0, one
// that is gone disappears); requests that end afterwards on connections
// accepted before that reload count in the old table, which is no longer
// scraped. Labels never mix: a slot belongs to one (listener, route) label
// pair for the table's life.
//
// Bounds: (listeners + 1) x (routes + 1) x 3 x 6 counters of 8 octets per
// worker; both are from the configuration. The extra listener and route
// slot, labelled kNone, counts a request on no configured listener (one
// accepted while a reload removed its address) or that no route took (404,
// an ACME challenge, a cleartext redirect, a request refused before routing).
// Thread affinity: built on the control thread; a worker adds to its own
// block only; reads (the scrape) on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/counters.h"

namespace tlsfront::metrics {

// The label of the unrouted slot and of the no-listener slot.
inline constexpr std::string_view kNone = "(none)";
inline constexpr size_t kRequestProtocols = 3;  // HTTP/1.0, HTTP/1.1, HTTP/2.0
inline constexpr size_t kStatusClasses = 6;     // 1xx..5xx, then "none" (no response was sent)

// Where a worker counts its requests: its block of a table (null: not
// counted, as in unit tests). `listeners` / `routes`: the configured ones;
// an index past them (the configured count) is the kNone slot.
struct RequestSlots {
  Counter* base = nullptr;
  uint32_t listeners = 0;
  uint32_t routes = 0;

  // Protocol: "HTTP/1.0", "HTTP/1.1" or "HTTP/2.0"; status: as sent (0 or
  // outside 100..599: "none"). Worker thread.
  void count(size_t listener, size_t route, std::string_view protocol, int status) const {
    if (base == nullptr) return;
    const size_t p = protocol == "HTTP/2.0" ? 2 : protocol == "HTTP/1.0" ? 0 : 1;
    const size_t cls = status >= 100 && status <= 599 ? static_cast<size_t>(status / 100 - 1) : 5;
    if (listener > listeners) listener = listeners;
    if (route > routes) route = routes;
    base[((listener * (routes + 1) + route) * kRequestProtocols + p) * kStatusClasses + cls].add();
  }
};

class RequestCounterTable {
 public:
  // One block for each of `workers` (0: none, as `tlsfront --test`).
  RequestCounterTable(std::vector<std::string> listeners, std::vector<std::string> routes, size_t workers);

  // The table a generation with these labels uses: `previous` when its
  // labels and worker count are the same, else a new one whose counters
  // start from `previous`'s totals under the same labels. Control thread.
  static std::shared_ptr<RequestCounterTable> for_labels(std::vector<std::string> listeners,
                                                         std::vector<std::string> routes, size_t workers,
                                                         const std::shared_ptr<RequestCounterTable>& previous);

  RequestSlots worker(size_t w) const;

  // Calls fn(listener, route, protocol index, class index, total) for every
  // slot with a non-zero total, summed over the workers. Any thread.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    const size_t n = slots();
    for (size_t i = 0; i < n; ++i) {
      uint64_t total = 0;
      for (const auto& block : blocks_) total += block[i].get();
      if (total == 0) continue;
      const size_t cls = i % kStatusClasses, p = i / kStatusClasses % kRequestProtocols;
      const size_t pair = i / (kStatusClasses * kRequestProtocols);
      fn(listeners_[pair / routes_.size()], routes_[pair % routes_.size()], p, cls, total);
    }
  }

 private:
  size_t slots() const { return listeners_.size() * routes_.size() * kRequestProtocols * kStatusClasses; }

  // Both end with kNone.
  std::vector<std::string> listeners_, routes_;
  std::vector<std::unique_ptr<Counter[]>> blocks_;  // one per worker, slots() counters each
};

}  // namespace tlsfront::metrics
