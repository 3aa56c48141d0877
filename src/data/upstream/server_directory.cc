#include "data/upstream/server_directory.h"

namespace tlsfront::upstream {

bool ServerDirectory::publish(const std::string& key, AddressList addresses) {
  std::lock_guard lock(mu_);
  auto& slot = map_[key];
  if (slot && *slot == addresses) return false;
  slot = std::make_shared<const AddressList>(std::move(addresses));
  version_.fetch_add(1, std::memory_order_release);
  return true;
}

std::shared_ptr<const AddressList> ServerDirectory::lookup(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

}  // namespace tlsfront::upstream
