#include "metrics/request_counters.h"

#include <map>
#include <tuple>

namespace tlsfront::metrics {

RequestCounterTable::RequestCounterTable(std::vector<std::string> listeners, std::vector<std::string> routes,
                                         size_t workers)
    : listeners_(std::move(listeners)), routes_(std::move(routes)) {
  listeners_.emplace_back(kNone);
  routes_.emplace_back(kNone);
  for (size_t w = 0; w < workers; ++w) blocks_.push_back(std::make_unique<Counter[]>(slots()));
}

std::shared_ptr<RequestCounterTable> RequestCounterTable::for_labels(
    std::vector<std::string> listeners, std::vector<std::string> routes, size_t workers,
    const std::shared_ptr<RequestCounterTable>& previous) {
  auto table = std::make_shared<RequestCounterTable>(std::move(listeners), std::move(routes), workers);
  if (!previous || workers == 0) return table;
  if (previous->listeners_ == table->listeners_ && previous->routes_ == table->routes_ &&
      previous->blocks_.size() == workers) {
    return previous;
  }
  // Carry the totals over by label into worker 0's block (not yet shared:
  // no worker adds to this table before it is published).
  std::map<std::tuple<std::string_view, std::string_view, size_t, size_t>, uint64_t> totals;
  previous->for_each([&](std::string_view l, std::string_view r, size_t p, size_t c, uint64_t n) {
    totals[{l, r, p, c}] = n;
  });
  Counter* first = table->blocks_.front().get();
  for (size_t i = 0; i < table->slots(); ++i) {
    const size_t cls = i % kStatusClasses, p = i / kStatusClasses % kRequestProtocols;
    const size_t pair = i / (kStatusClasses * kRequestProtocols);
    const auto it = totals.find({table->listeners_[pair / table->routes_.size()],
                                 table->routes_[pair % table->routes_.size()], p, cls});
    if (it != totals.end()) first[i].set(it->second);
  }
  return table;
}

RequestSlots RequestCounterTable::worker(size_t w) const {
  if (w >= blocks_.size()) return {};
  return {blocks_[w].get(), static_cast<uint32_t>(listeners_.size() - 1), static_cast<uint32_t>(routes_.size() - 1)};
}

}  // namespace tlsfront::metrics
