// The Grafana dashboard (conf/grafana/tlsfront.json) and the Prometheus rules
// (conf/prometheus/tlsfront.rules.yml) against real metrics: a real
// Prometheus (Debian's prometheus package, as promtool for the rules test)
// scrapes a real tlsfront under a little traffic (TLS 1.2 and 1.3, full and
// resumed handshakes, HTTP/1.1 and HTTP/2, a 404, a 502 from an upstream that
// refuses connections, an OCSP staple from a real `openssl ocsp` responder)
// and the output of `tlsfront probe --prom` (what the dashboard's certificate
// row reads through node_exporter's textfile collector). Then:
//   - every metric name a dashboard query, a template variable or a rule
//     names must be in what tlsfront (or the probe) exports;
//   - every panel query, with the template variables set to "All", must
//     evaluate through Prometheus's HTTP API without error and return at
//     least one series;
//   - every rule must load and evaluate healthy, and each recording rule
//     must have produced a series.
// A dashboard that refers to a metric that no longer exists is a defect.
#include <openssl/ssl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

const std::string kPrometheus = "/usr/bin/prometheus";
const std::string kOpenssl = "/usr/bin/openssl";
const std::string kDashboard = std::string(TLSFRONT_SOURCE_DIR) + "/conf/grafana/tlsfront.json";
const std::string kRules = std::string(TLSFRONT_SOURCE_DIR) + "/conf/prometheus/tlsfront.rules.yml";

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The body of an HTTP/1.0 GET (HTTP/1.0: Prometheus's Go server then sends
// no chunked body); "" unless the answer is a 200 or, with `any_status`, at all
// (Prometheus's API explains a refused query in a 400's JSON body).
std::string get(int port, const std::string& target, bool any_status = false) {
  const std::string r = plain_request(port, "GET " + target + " HTTP/1.0\r\nHost: prometheus\r\n\r\n",
                                      milliseconds(10'000));
  const size_t body = r.find("\r\n\r\n");
  if (!any_status && r.rfind("HTTP/1.0 200", 0) != 0 && r.rfind("HTTP/1.1 200", 0) != 0) return "";
  return body == std::string::npos ? "" : r.substr(body + 4);
}

// Metric names in `text`: tlsfront_... not preceded by ':' (a recording
// rule's name, level:metric:operations, is not an exported metric).
std::set<std::string> metric_names(const std::string& text) {
  std::set<std::string> names;
  static const std::regex name("(^|[^:a-zA-Z0-9_])(tlsfront_[a-z0-9_]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2]);
  }
  return names;
}

// The names of the series of an exposition body (no labels).
std::set<std::string> exported_names(const std::map<std::string, double>& series) {
  std::set<std::string> names;
  for (const auto& [s, v] : series) names.insert(s.substr(0, s.find('{')));
  return names;
}

struct PanelQuery {
  std::string panel, expr;
};

// Every target of every panel (rows' nested panels too).
void collect_queries(simdjson::dom::array panels, std::vector<PanelQuery>& out) {
  for (simdjson::dom::element p : panels) {
    std::string_view title;
    if (p["title"].get(title)) title = "(untitled)";
    simdjson::dom::array targets;
    if (!p["targets"].get(targets)) {
      for (simdjson::dom::element t : targets) {
        std::string_view expr;
        if (!t["expr"].get(expr)) out.push_back({std::string(title), std::string(expr)});
      }
    }
    simdjson::dom::array nested;
    if (!p["panels"].get(nested)) collect_queries(nested, out);
  }
}

// Grafana's variables as the "All" choice and a fixed rate interval (4 scrape
// intervals of this test's Prometheus, as Grafana's $__rate_interval would be).
std::string expand_variables(std::string expr) {
  for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"$__rate_interval", "10s"}, {"$instance", ".*"}, {"$listener", ".*"}, {"$route", ".*"},
           {"$upstream", ".*"}}) {
    for (size_t at; (at = expr.find(var)) != std::string::npos;) expr.replace(at, var.size(), value);
  }
  return expr;
}

class Dashboard : public ProxyTest {
 protected:
  void SetUp() override {
    if (!file_exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " not found (scripts/install-deps.sh installs it)";
    ProxyTest::SetUp();
  }
  void TearDown() override {
    prometheus_.stop();
    files_.stop();
    ocsp_.stop();
    ProxyTest::TearDown();
  }

  // `openssl ocsp` answering for the test PKI's intermediate (which issued the
  // leaf), so tlsfront staples and exports its tlsfront_ocsp_* series.
  bool start_ocsp_responder() {
    ocsp_port_ = free_port();
    const std::string out = dir_.file("ocsp.out");
    if (!ocsp_.start({kOpenssl, "ocsp", "-index", pki("ocsp-index.txt"), "-port", std::to_string(ocsp_port_),
                      "-rsigner", pki("ocsp-signer.pem"), "-rkey", pki("ocsp-signer.key"), "-CA",
                      pki("intermediate.pem"), "-nmin", "60", "-ignore_err"},
                     out, out + ".err")) {
      return false;
    }
    return wait_until([&] { return read_file(out).find("ACCEPT") != std::string::npos; });
  }

  // python3 -m http.server over `dir`: a textfile-collector stand-in that
  // serves the probe's --prom output at /metrics.
  bool start_file_server(const std::string& dir) {
    const std::string out = dir_.file("files.out");
    files_port_ = free_port();
    if (!files_.start({kPython, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir,
                       std::to_string(files_port_)},
                      out, out + ".err")) {
      return false;
    }
    return wait_until([&] { return !get(files_port_, "/metrics").empty(); });
  }

  bool start_prometheus() {
    prometheus_port_ = free_port();
    const std::string config = dir_.file("prometheus.yml");
    write_file(config, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                       "rule_files:\n  - \"" + kRules + "\"\n"
                       "scrape_configs:\n"
                       "  - job_name: tlsfront\n    static_configs:\n      - targets: [\"127.0.0.1:" +
                           std::to_string(proxy_.admin_port()) + "\"]\n"
                       "  - job_name: probe\n    static_configs:\n      - targets: [\"127.0.0.1:" +
                           std::to_string(files_port_) + "\"]\n");
    const std::string out = dir_.file("prometheus.out");
    if (!prometheus_.start({kPrometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir_.file("tsdb"),
                            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_),
                            "--log.level=warn"},
                           out, dir_.file("prometheus.err"))) {
      return false;
    }
    return wait_until([&] { return !get(prometheus_port_, "/-/ready").empty(); }, milliseconds(30'000));
  }

  // The data of an instant query; `error` set when Prometheus refused it.
  struct Result {
    std::string error;
    size_t series = 0;
    std::string first;  // the first sample, for the failure message
  };
  Result query(const std::string& expr) {
    Result r;
    const std::string body = get(prometheus_port_, "/api/v1/query?query=" + url_encode(expr), true);
    simdjson::dom::element doc;
    if (body.empty() || parser_.parse(body).get(doc)) {
      r.error = "no JSON answer: " + body;
      return r;
    }
    std::string_view status, error;
    if (doc["status"].get(status) || status != "success") {
      if (!doc["error"].get(error)) r.error = std::string(error);
      if (r.error.empty()) r.error = std::string(status);
      return r;
    }
    simdjson::dom::array result;
    if (doc["data"]["result"].get(result)) {
      r.error = "no data.result";
      return r;
    }
    r.series = result.size();
    if (r.series) r.first = simdjson::to_string(result.at(0));
    return r;
  }

  // The names of the series of a scrape of tlsfront's admin listener.
  std::set<std::string> tlsfront_names() { return exported_names(scrape_metrics(proxy_.admin_port())); }

  Process ocsp_, files_, prometheus_;
  int ocsp_port_ = 0, files_port_ = 0, prometheus_port_ = 0;
  simdjson::dom::parser parser_;
};

TEST_F(Dashboard, EveryQueryAndRuleAnswersOverRealMetrics) {
  ASSERT_TRUE(file_exists(kOpenssl));
  ASSERT_TRUE(start_ocsp_responder()) << ocsp_.err();
  // An upstream nothing listens on: its requests get 502 and count failures.
  int dead_port = 0;
  const int held = listen_loopback(1, dead_port);
  ASSERT_GE(held, 0);
  ::close(held);
  ProxyOptions o;
  o.tls_extra = "[tls.ocsp]\nresponder = \"http://127.0.0.1:" + std::to_string(ocsp_port_) + "/\"\n";
  o.routes = "[[upstream]]\nname = \"dead\"\nservers = [\"127.0.0.1:" + std::to_string(dead_port) +
             "\"]\n\n[[route]]\npath_prefix = \"/dead/\"\nupstream = \"dead\"\n\n"
             "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n";
  o.listen_extra = "alpn = [\"h2\", \"http/1.1\"]\n";
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_until([&] { return tlsfront_names().count("tlsfront_ocsp_staple_present") > 0; },
                         milliseconds(20'000)))
      << "no OCSP series: " << proxy_.process().err();

  // The probe's --prom output, served as a textfile collector would.
  const std::string textfile = dir_.file("textfile");
  std::filesystem::create_directories(textfile);
  const std::string p = std::to_string(port());
  RunResult probe = run_command(dir_, {TLSFRONT_BINARY, "probe", "--count", "1", "--no-staple-ok", "--prom", "--ca",
                                       pki("root.pem"), "--resolve", "localhost:" + p + ":127.0.0.1",
                                       "https://localhost:" + p + "/"},
                                milliseconds(60'000));
  ASSERT_TRUE(probe.status.exited) << probe.err;
  write_file(textfile + "/metrics", probe.out);
  ASSERT_TRUE(start_file_server(textfile)) << files_.err();
  ASSERT_TRUE(start_prometheus()) << prometheus_.err();
  ASSERT_TRUE(wait_until([&] { return query("up{job=\"tlsfront\"} == 1").series == 1 &&
                                      query("up{job=\"probe\"} == 1").series == 1; },
                         milliseconds(30'000)))
      << "Prometheus does not scrape tlsfront and the probe: " << prometheus_.err();

  // A little traffic while Prometheus scrapes, so the rates are not all zero.
  for (int round = 0; round < 3; ++round) {
    TlsOptions t13;
    t13.min_version = t13.max_version = TLS1_3_VERSION;
    TlsOptions t12;
    t12.min_version = t12.max_version = TLS1_2_VERSION;
    t12.no_ticket = true;
    for (TlsOptions t : {t13, t12}) {
      SSL_SESSION* session = nullptr;
      for (int resume = 0; resume < 2; ++resume) {  // a full handshake, then a resumption
        TlsClient c;
        t.session = session;
        ASSERT_TRUE(c.connect(port(), t)) << c.error();
        for (const char* path : {"/", "/status/404", "/dead/x"}) {
          ASSERT_TRUE(c.write(std::string("GET ") + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n"));
          ASSERT_TRUE(c.read_response()) << path;
        }
        if (session) SSL_SESSION_free(session);
        session = c.take_session();
      }
      SSL_SESSION_free(session);
    }
    HttpRequest h2;
    h2.http2 = true;
    EXPECT_EQ(http(port(), h2).status, 200);
    std::this_thread::sleep_for(milliseconds(1'000));  // spread over scrapes
  }
  ASSERT_TRUE(wait_until([&] {
    return query("sum(rate(tlsfront_requests_total{code=\"5xx\"}[10s])) > 0").series == 1 &&
           query("sum(rate(tlsfront_tls_handshakes_total{kind=\"resumed_ticket\"}[10s])) > 0").series == 1;
  }, milliseconds(20'000))) << "Prometheus never saw the traffic";

  const std::set<std::string> exported = [&] {
    std::set<std::string> names = tlsfront_names();
    for (const std::string& n : exported_names(parse_metrics(probe.out))) names.insert(n);
    return names;
  }();

  // 1. Names: the dashboard (queries and template variables) and the rules.
  const std::string dashboard_text = read_file(kDashboard);
  ASSERT_FALSE(dashboard_text.empty()) << kDashboard;
  const std::set<std::string> dashboard_names = metric_names(dashboard_text);
  EXPECT_GE(dashboard_names.size(), 30u);
  for (const std::string& n : dashboard_names) {
    EXPECT_TRUE(exported.count(n)) << kDashboard << " uses " << n << ", which tlsfront does not export";
  }
  const std::set<std::string> rule_names = metric_names(read_file(kRules));
  EXPECT_FALSE(rule_names.empty());
  for (const std::string& n : rule_names) {
    EXPECT_TRUE(exported.count(n)) << kRules << " uses " << n << ", which tlsfront does not export";
  }

  // 2. Every panel query answers.
  simdjson::dom::parser dash_parser;
  simdjson::dom::element dash;
  ASSERT_EQ(dash_parser.parse(dashboard_text).get(dash), simdjson::SUCCESS) << kDashboard << " is not JSON";
  std::vector<PanelQuery> queries;
  simdjson::dom::array panels;
  ASSERT_EQ(dash["panels"].get(panels), simdjson::SUCCESS);
  collect_queries(panels, queries);
  EXPECT_GE(queries.size(), 40u);
  std::set<int64_t> ids;
  for (simdjson::dom::element panel : panels) {
    int64_t id = 0;
    EXPECT_EQ(panel["id"].get(id), simdjson::SUCCESS);
    EXPECT_TRUE(ids.insert(id).second) << "panel id " << id << " twice";
  }
  for (const PanelQuery& q : queries) {
    const std::string expr = expand_variables(q.expr);
    const Result r = query(expr);
    EXPECT_TRUE(r.error.empty()) << "panel \"" << q.panel << "\": " << expr << ": " << r.error;
    EXPECT_GT(r.series, 0u) << "panel \"" << q.panel << "\": " << expr << " returned nothing";
  }

  // 3. The template variables' label_values(metric, label) have non-empty values.
  simdjson::dom::array vars;
  ASSERT_EQ(dash["templating"]["list"].get(vars), simdjson::SUCCESS);
  static const std::regex label_values(R"(label_values\((.*),\s*([a-z_]+)\)$)");
  for (simdjson::dom::element v : vars) {
    std::string_view type, definition;
    if (v["type"].get(type) || type != "query" || v["definition"].get(definition)) continue;
    std::smatch m;
    const std::string def = expand_variables(std::string(definition));
    ASSERT_TRUE(std::regex_match(def, m, label_values)) << def;
    // Series that have the label (Grafana lists no empty value).
    std::string selector = m[1].str();
    const std::string has_label = m[2].str() + "!=\"\"";
    if (selector.ends_with("}")) {
      selector.insert(selector.size() - 1, "," + has_label);
    } else {
      selector += "{" + has_label + "}";
    }
    EXPECT_GT(query("count by (" + m[2].str() + ") (" + selector + ")").series, 0u) << "variable " << def;
  }

  // 4. The rules: all loaded, healthy once evaluated, recordings recorded.
  ASSERT_TRUE(wait_until([&] {
    return query("instance:tlsfront_tls_resumed_ratio:rate5m").series > 0 &&
           query("instance:tlsfront_session_cache_hit_ratio:rate5m").series > 0;
  }, milliseconds(20'000))) << "the recording rules recorded nothing";
  const std::string rules = get(prometheus_port_, "/api/v1/rules");
  simdjson::dom::parser rules_parser;
  simdjson::dom::element rdoc;
  ASSERT_EQ(rules_parser.parse(rules).get(rdoc), simdjson::SUCCESS) << rules;
  size_t n_rules = 0;
  simdjson::dom::array groups;
  ASSERT_EQ(rdoc["data"]["groups"].get(groups), simdjson::SUCCESS) << rules;
  for (simdjson::dom::element g : groups) {
    for (simdjson::dom::element rule : g["rules"].get_array()) {
      ++n_rules;
      std::string_view name, health, type, expr;
      EXPECT_EQ(rule["name"].get(name), simdjson::SUCCESS);
      EXPECT_EQ(rule["health"].get(health), simdjson::SUCCESS);
      EXPECT_EQ(rule["type"].get(type), simdjson::SUCCESS);
      EXPECT_EQ(rule["query"].get(expr), simdjson::SUCCESS);
      EXPECT_EQ(health, "ok") << name << ": " << simdjson::to_string(rule);
      const Result r = query(std::string(expr));
      EXPECT_TRUE(r.error.empty()) << name << ": " << r.error;
      // An alert's condition is empty when nothing is wrong; a recording is not.
      if (type == "recording") EXPECT_GT(query(std::string(name)).series, 0u) << name;
    }
  }
  EXPECT_EQ(n_rules, 6u) << rules;  // conf/prometheus/tlsfront.rules.yml's
}

}  // namespace
}  // namespace tlsfront::itest
