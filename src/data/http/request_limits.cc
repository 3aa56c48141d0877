#include "data/http/request_limits.h"

#include <chrono>

#include "message/header_token.h"
#include "util/ip_address.h"

namespace tlsfront::http {
namespace {

// The zone's key for this request; "" when it has none (a missing header:
// not limited, as nginx does not account an empty key).
std::string_view key_of(config::LimitKey key, const std::string& header, const ConnectionInfo& info,
                        const RequestRecord& record) {
  switch (key) {
    case config::LimitKey::RemoteAddr:
      return record.client(info);
    case config::LimitKey::Host:
      return record.head.host;
    case config::LimitKey::Header:
      for (const auto& h : record.head.headers) {
        if (iequals(h.name, header)) return h.value;
      }
      return {};
    case config::LimitKey::ClientFingerprint:
      // Only a verified certificate names a client (an unverified one is
      // whatever the client made up).
      if (info.client_cert && info.client_cert->verified()) return info.client_cert->fingerprint;
      return {};
  }
  return {};
}

}  // namespace

LimitDecision check_route_limits(const config::Config& config, const RequestLimits* limits, const config::Route& route,
                                 const ConnectionInfo& info, RequestRecord& record) {
  LimitDecision d;
  if (!route.access.empty()) {
    const auto client = IpAddress::parse(record.client(info));
    if (!client || !config::access_allows(route.access, *client)) {
      record.limit = "access";
      d.status = 403;
      return d;
    }
  }
  if (limits == nullptr) return d;
  if (!route.limit_req.empty()) {
    const uint64_t now = gcra_now_ns();
    for (size_t i : route.limit_req) {
      const config::LimitReqZone& z = config.limit_req[i];
      const std::string_view key = key_of(z.key, z.header, info, record);
      if (key.empty()) continue;
      if (z.store == config::SessionStore::Redis) {
        d.remote.emplace_back(i, std::string(key));
        continue;
      }
      RateZone& zone = *limits->req[i];
      const GcraVerdict v = zone.table.check(key, now, GcraParams{z.emission_ns, z.burst, z.delay});
      if (!v.pass) {
        zone.rejected.fetch_add(1, std::memory_order_relaxed);
        record.limit = z.name;
        d.status = 429;
        d.retry_after_s = static_cast<uint32_t>((v.retry_after_ns + 999'999'999) / 1'000'000'000);
        return d;
      }
      if (v.wait_ns == 0) {
        zone.passed.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      zone.delayed.fetch_add(1, std::memory_order_relaxed);
      record.limit = z.name;
      d.wait_ms = std::max(d.wait_ms, (v.wait_ns + 999'999) / 1'000'000);
    }
  }
  for (size_t i : route.limit_conn) {
    const config::LimitConnZone& z = config.limit_conn[i];
    const std::string_view key = key_of(z.key, z.header, info, record);
    if (key.empty()) continue;
    ConnZone& zone = *limits->conn[i];
    if (zone.table->acquire(key, z.max) != ConcurrencyTable::Acquire::Ok) {
      zone.rejected.fetch_add(1, std::memory_order_relaxed);
      record.limit = z.name;
      d.status = 503;
      d.slots.clear();  // the slots taken by earlier zones go back
      return d;
    }
    zone.passed.fetch_add(1, std::memory_order_relaxed);
    d.slots.emplace_back(zone.table, std::string(key));
  }
  return d;
}

}  // namespace tlsfront::http
