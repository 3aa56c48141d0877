// toml++ -> Config: parses the document, then hands each table to its
// parse_<section>.cc (loader.h).
#include "config/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "config/parse_context.h"
#include "config/units.h"
#include "util/unique_fd.h"

namespace tlsfront::config {
namespace {

namespace fs = std::filesystem;
using detail::ParseContext;
using detail::TableReader;

constexpr int64_t kMaxWorkers = 256;

// workers = "auto" | 1..256; "auto" is stored as 0.
Status parse_workers(const TableReader& root, int& out) {
  const toml::node* node = root.find("workers");
  if (node == nullptr) return {};
  std::string expected = "\"auto\" or an integer 1.." + std::to_string(kMaxWorkers);
  if (const auto* s = node->as_string()) {
    if (s->get() != "auto") {
      return root.error_at("workers", "expected " + expected + ", got " + quote(s->get()));
    }
    out = 0;
    return {};
  }
  if (node->as_integer() == nullptr) {
    return root.error_at("workers", "expected " + expected + ", got " +
                                        std::string(detail::type_name(node->type())));
  }
  return root.get_integer("workers", 1, kMaxWorkers, out);
}

// A route with require_client_cert = true answers every request 403 when no
// certificate name asks for a client certificate: refused at load.
Status check_client_cert_routes(const Config& config) {
  for (const auto& c : config.tls.certificates) {
    if (c.client_auth.enabled()) return {};
  }
  for (size_t i = 0; i < config.routes.size(); ++i) {
    if (config.routes[i].require_client_cert) {
      return make_error(Errc::Config, config.routes[i].position + ": route[" + std::to_string(i) +
                                          "].require_client_cert: no certificate asks for a client certificate "
                                          "(set [tls] verify_client and client_ca)");
    }
  }
  return {};
}

Result<Config> parse_document(std::string_view toml, const ParseContext& ctx) {
  toml::parse_result parsed = toml::parse(toml, std::string_view(ctx.source_name()));
  if (!parsed) {
    return ctx.error(parsed.error().source(), "syntax error", parsed.error().description());
  }
  TableReader root(ctx, parsed.table(), "");
  if (Status s = root.check_keys({"workers", "shutdown_timeout", "pid_file", "listen", "tls", "certificate", "upstream",
                                  "route", "log", "limits", "timeouts", "admin", "http2", "response_headers",
                                  "request_headers", "request_id_header", "compression", "resolver", "limit_req",
                                  "limit_conn", "acme", "open_file_cache"});
      !s.ok()) {
    return s.take_error();
  }

  Config config;
  if (Status s = parse_workers(root, config.workers); !s.ok()) return s.take_error();
  if (Status s = root.get_duration("shutdown_timeout", Millis{0}, config.shutdown_timeout); !s.ok()) {
    return s.take_error();
  }
  if (Status s = root.get_path("pid_file", config.pid_file, detail::Presence::Optional, false); !s.ok()) {
    return s.take_error();
  }
  if (Status s = detail::parse_listen(root, config.listeners); !s.ok()) return s.take_error();
  if (Status s = detail::parse_tls(root, config.tls); !s.ok()) return s.take_error();
  if (Status s = detail::parse_upstream(root, config.upstreams); !s.ok()) return s.take_error();
  if (Status s = detail::parse_resolver(root, config.resolver); !s.ok()) return s.take_error();
  if (Status s = detail::check_acme_upstreams(root, config.listeners, config.upstreams); !s.ok()) {
    return s.take_error();
  }
  if (Status s = detail::parse_limit_zones(root, config.limit_req, config.limit_conn); !s.ok()) return s.take_error();
  if (Status s = detail::parse_route(root, config, config.routes); !s.ok()) {
    return s.take_error();
  }
  if (Status s = check_client_cert_routes(config); !s.ok()) return s.take_error();
  if (Status s = detail::parse_acme(root, config, config.acme); !s.ok()) return s.take_error();
  if (Status s = detail::parse_compression(root, config.compression, config.routes); !s.ok()) return s.take_error();
  if (Status s = detail::parse_header_rules(root, "response_headers", HeaderDirection::Response, false,
                                            config.response_headers);
      !s.ok()) {
    return s.take_error();
  }
  if (Status s = detail::parse_header_rules(root, "request_headers", HeaderDirection::Request, false,
                                            config.request_headers);
      !s.ok()) {
    return s.take_error();
  }
  if (Status s = detail::parse_request_id_header(root, config.request_id_header); !s.ok()) return s.take_error();
  if (Status s = detail::parse_log(root, config.log); !s.ok()) return s.take_error();
  if (Status s = detail::parse_open_file_cache(root, config.open_file_cache); !s.ok()) return s.take_error();
  if (Status s = detail::parse_limits(root, config.limits); !s.ok()) return s.take_error();
  if (Status s = detail::parse_timeouts(root, config.timeouts); !s.ok()) return s.take_error();
  if (Status s = detail::parse_admin(root, config.listeners, config.admin); !s.ok()) return s.take_error();
  if (Status s = detail::parse_http2(root, config.http2); !s.ok()) return s.take_error();
  return config;
}

// Absolute, normalized form of `path`; `path` itself if the current
// directory is unavailable.
fs::path absolute_path(std::string_view path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(std::string(path)), ec);
  if (ec) return fs::path(std::string(path)).lexically_normal();
  return absolute.lexically_normal();
}

Result<std::string> read_file(const std::string& path) {
  auto fail = [&path](int err) {
    return make_error(Errc::Config,
                      path + ": cannot read config file: " + std::strerror(err));
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail(errno);
  std::string content;
  char buffer[16 * 1024];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

}  // namespace

Result<Config> load_string(std::string_view toml, std::string_view source_name) {
  ParseContext ctx(std::string(source_name), absolute_path(source_name).parent_path());
  Result<Config> config = parse_document(toml, ctx);
  if (config.ok()) config->path = std::string(source_name);
  return config;
}

Result<std::vector<std::string>> accepted_keys(std::string_view toml, std::string_view source_name) {
  ParseContext ctx(std::string(source_name), absolute_path(source_name).parent_path());
  std::vector<std::string> keys;
  ctx.record_accepted_keys(&keys);
  if (Result<Config> config = parse_document(toml, ctx); !config.ok()) return config.take_error();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

Result<Config> load_file(const std::string& path) {
  Result<std::string> content = read_file(path);
  if (!content.ok()) return content.take_error();
  Result<Config> config = load_string(*content, path);
  if (config.ok()) config->path = absolute_path(path).string();
  return config;
}

}  // namespace tlsfront::config
