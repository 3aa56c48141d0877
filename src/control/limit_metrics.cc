#include "control/limit_metrics.h"

#include <fmt/format.h>

#include <iterator>

#include "data/client_admission.h"
#include "metrics/prometheus.h"
#include "tls/handshake_budget.h"

namespace tlsfront::control {

std::string limit_metrics(const data::Generation& gen) {
  std::string out;
  auto it = std::back_inserter(out);
  const auto& cfg = gen.config;
  if (!cfg.limit_req.empty()) {
    out +=
        "# HELP tlsfront_limit_req_requests_total Requests checked by a [[limit_req]] zone: passed at once, passed "
        "after a delay, rejected (429), let through unchecked while its Redis failed (failed_open).\n# TYPE tlsfront_limit_req_requests_total counter\n";
    for (size_t i = 0; i < cfg.limit_req.size(); ++i) {
      const std::string zone = metrics::escape_label_value(cfg.limit_req[i].name);
      const http::RateZone& z = *gen.limits.req[i];
      fmt::format_to(it, "tlsfront_limit_req_requests_total{{zone=\"{}\",result=\"passed\"}} {}\n", zone,
                     z.passed.load());
      fmt::format_to(it, "tlsfront_limit_req_requests_total{{zone=\"{}\",result=\"delayed\"}} {}\n", zone,
                     z.delayed.load());
      fmt::format_to(it, "tlsfront_limit_req_requests_total{{zone=\"{}\",result=\"rejected\"}} {}\n", zone,
                     z.rejected.load());
      if (cfg.limit_req[i].store == config::SessionStore::Redis) {
        fmt::format_to(it, "tlsfront_limit_req_requests_total{{zone=\"{}\",result=\"failed_open\"}} {}\n", zone,
                       z.failed_open.load());
      }
    }
    out +=
        "# HELP tlsfront_limit_req_keys Keys a [[limit_req]] zone tracks now.\n# TYPE tlsfront_limit_req_keys gauge\n";
    for (size_t i = 0; i < cfg.limit_req.size(); ++i) {
      fmt::format_to(it, "tlsfront_limit_req_keys{{zone=\"{}\"}} {}\n",
                     metrics::escape_label_value(cfg.limit_req[i].name), gen.limits.req[i]->table.entries());
    }
    out +=
        "# HELP tlsfront_limit_req_evictions_total Keys a [[limit_req]] zone forgot to stay within its size.\n"
        "# TYPE tlsfront_limit_req_evictions_total counter\n";
    for (size_t i = 0; i < cfg.limit_req.size(); ++i) {
      fmt::format_to(it, "tlsfront_limit_req_evictions_total{{zone=\"{}\"}} {}\n",
                     metrics::escape_label_value(cfg.limit_req[i].name), gen.limits.req[i]->table.evictions());
    }
  }
  if (!cfg.limit_conn.empty()) {
    out +=
        "# HELP tlsfront_limit_conn_requests_total Requests checked by a [[limit_conn]] zone: passed, rejected "
        "(503).\n# TYPE tlsfront_limit_conn_requests_total counter\n";
    for (size_t i = 0; i < cfg.limit_conn.size(); ++i) {
      const std::string zone = metrics::escape_label_value(cfg.limit_conn[i].name);
      const http::ConnZone& z = *gen.limits.conn[i];
      fmt::format_to(it, "tlsfront_limit_conn_requests_total{{zone=\"{}\",result=\"passed\"}} {}\n", zone,
                     z.passed.load());
      fmt::format_to(it, "tlsfront_limit_conn_requests_total{{zone=\"{}\",result=\"rejected\"}} {}\n", zone,
                     z.rejected.load());
    }
    out +=
        "# HELP tlsfront_limit_conn_keys Keys with requests in progress in a [[limit_conn]] zone.\n"
        "# TYPE tlsfront_limit_conn_keys gauge\n";
    for (size_t i = 0; i < cfg.limit_conn.size(); ++i) {
      fmt::format_to(it, "tlsfront_limit_conn_keys{{zone=\"{}\"}} {}\n",
                     metrics::escape_label_value(cfg.limit_conn[i].name), gen.limits.conn[i]->table->entries());
    }
  }
  if (cfg.limits.max_connections_per_client != 0) {
    fmt::format_to(
        it,
        "# HELP tlsfront_client_addresses Client addresses with connections open ([limits] "
        "max_connections_per_client).\n# TYPE tlsfront_client_addresses gauge\ntlsfront_client_addresses {}\n",
        data::client_connections()->entries());
  }
  if (cfg.limits.max_full_handshakes_per_client != 0) {
    fmt::format_to(it,
                   "# HELP tlsfront_handshake_budget_addresses Client addresses whose full-handshake budget is "
                   "tracked ([limits] max_full_handshakes_per_client).\n# TYPE tlsfront_handshake_budget_addresses "
                   "gauge\ntlsfront_handshake_budget_addresses {}\n",
                   tls::HandshakeBudget::table().entries());
  }
  return out;
}

}  // namespace tlsfront::control
