// [tls.store]: the cluster certificate store (control/cert_store.h). The
// Redis keys are those of [tls.ticket_keys] (same names, same rules).
#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_cert_store(const TableReader& tls, CertStore& out) {
  auto table = table_of(tls, "store");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(tls.context(), **table, tls.path_of("store"));
  if (Status s = t.check_keys({"region", "seal_key_files", "cache_dir", "poll_interval", "reconcile_interval",
                               "redis", "redis_user", "redis_password_file", "redis_prefix", "redis_timeout",
                               "redis_tls"});
      !s.ok()) {
    return s;
  }
  out.enabled = true;
  if (Status s = t.get_string("region", out.region, Presence::Required, false); !s.ok()) return s;
  if (!is_region_name(out.region)) return t.error_at("region", "must be 1 to 64 of a-z, 0-9, \".\", \"_\", \"-\"");
  if (out.region == "global") return t.error_at("region", "\"global\" is the region every node serves; name this node's own");
  auto files = t.get_array("seal_key_files", Presence::Required);
  if (!files.ok()) return files.take_error();
  if ((*files)->empty()) return t.error_at("seal_key_files", "needs at least one key file (the first seals)");
  if ((*files)->size() > 16) return t.error_at("seal_key_files", "at most 16 key files");
  for (size_t i = 0; i < (*files)->size(); ++i) {
    const toml::node& element = *(*files)->get(i);
    std::string path = t.path_of("seal_key_files") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(t.context(), element, path, "a string");
    if (name->get().empty()) return t.context().error(element.source(), path, "must not be empty");
    out.seal_key_files.push_back(t.context().resolve_path(name->get()));
  }
  if (Status s = t.get_path("cache_dir", out.cache_dir, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_duration("poll_interval", Millis{50}, out.poll_interval); !s.ok()) return s;
  if (out.poll_interval > Millis{3'600'000}) return t.error_at("poll_interval", "must be at most 1h");
  if (Status s = t.get_duration("reconcile_interval", Millis{1000}, out.reconcile_interval); !s.ok()) return s;
  if (out.reconcile_interval > Millis{86'400'000}) return t.error_at("reconcile_interval", "must be at most 24h");
  return parse_redis_connection(t, out, Millis{10}, Millis{60'000});
}

}  // namespace tlsfront::config::detail
