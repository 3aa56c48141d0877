#include "control/acme_lock.h"

#include <vector>

namespace tlsfront::control {
namespace {

// KEYS[1] lock, ARGV[1] our value, ARGV[2] lease ms.
constexpr const char* kRenewScript = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

constexpr const char* kReleaseScript = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
)lua";

// kPutScript with a fourth key (the lock) and a last argument (our value):
// the store's own put, run only while the lock is ours.
std::string fenced_put_script() {
  return std::string(R"lua(
if redis.call('GET', KEYS[4]) ~= ARGV[#ARGV] then return -1 end
local ARGV = {unpack(ARGV, 1, #ARGV - 1)}
)lua") + tls::kPutScript;
}

}  // namespace

AcmeLock::AcmeLock(const redis::Client& client, std::string prefix, std::string region, std::string holder)
    : client_(client), prefix_(std::move(prefix)), region_(std::move(region)), holder_(std::move(holder)) {}

AcmeLock::~AcmeLock() { release(); }

std::string AcmeLock::lock_key() const { return prefix_ + ":acme:lock:" + region_; }
std::string AcmeLock::fence_key() const { return prefix_ + ":acme:fence:" + region_; }

Result<long long> AcmeLock::eval(std::vector<std::string> cmd) {
  long long out = 0;
  const std::vector<std::vector<std::string>> cmds = {std::move(cmd)};
  Status st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    out = r.integer();
    return {};
  });
  if (!st) return st.take_error();
  return out;
}

Result<bool> AcmeLock::acquire(std::chrono::milliseconds lease) {
  value_.clear();
  uint64_t token = 0;
  bool taken = false;
  const std::vector<std::vector<std::string>> incr = {{"INCR", fence_key()}};
  Status st = client_.call_blocking(incr, [&](size_t, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    token = static_cast<uint64_t>(r.integer());
    return {};
  });
  if (!st) return st.take_error();
  const std::string value = std::to_string(token) + ":" + holder_;
  const std::vector<std::vector<std::string>> set = {
      {"SET", lock_key(), value, "NX", "PX", std::to_string(lease.count())}};
  st = client_.call_blocking(set, [&](size_t, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    taken = !r.is_nil();
    return {};
  });
  if (!st) return st.take_error();
  if (taken) {
    value_ = value;
    token_ = token;
  }
  return taken;
}

Result<bool> AcmeLock::renew(std::chrono::milliseconds lease) {
  if (!held()) return false;
  auto r = eval({"EVAL", kRenewScript, "1", lock_key(), value_, std::to_string(lease.count())});
  if (!r) return r.take_error();
  if (*r == 0) value_.clear();
  return *r == 1;
}

void AcmeLock::release() {
  if (!held()) return;
  (void)eval({"EVAL", kReleaseScript, "1", lock_key(), value_});
  value_.clear();
}

Result<long long> AcmeLock::put(const tls::StoreEntry& entry) {
  if (!held()) return -1;
  std::vector<std::string> cmd = {"EVAL",
                                  fenced_put_script(),
                                  "4",
                                  tls::store_entry_key(prefix_, entry.region, entry.name),
                                  tls::store_index_key(prefix_, entry.region),
                                  tls::store_version_key(prefix_, entry.region),
                                  lock_key(),
                                  entry.name,
                                  std::to_string(entry.updated_at)};
  for (auto& f : entry.fields()) cmd.push_back(std::move(f));
  cmd.push_back(value_);
  auto r = eval(std::move(cmd));
  if (r && *r == -1) value_.clear();
  return r;
}

}  // namespace tlsfront::control
