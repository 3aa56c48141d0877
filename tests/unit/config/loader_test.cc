// TOML -> Config: every key, the defaults, and each class of error with its
// exact "file:line:column: key path: message" (src/config/loader.h).
#include "config/loader.h"
#include "loader_test_support.h"
#include "shared/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tlsfront::config {
namespace {

TEST(Loader, FullConfigWithEveryKey) {
  Config c = load_ok(R"(
workers = 4

[[listen]]
address = "0.0.0.0:443"
backlog = 1024

[[listen]]
address = "[::1]:8443"

[tls]
protocols = ["TLSv1.3"]
ciphers = "ECDHE-RSA-AES128-GCM-SHA256"
ciphersuites = "TLS_AES_256_GCM_SHA384"
groups = "X25519"
prefer_server_ciphers = true
certificate = "certs/chain.pem"
key = "../keys/./leaf.key"

[[upstream]]
name = "api-v1.internal_2"
servers = ["10.0.0.1:9000", "[2001:db8::2]:9001", "localhost:9002"]
keepalive = 0
keepalive_timeout = "90s"
keepalive_requests = 5000
connect_timeout = "500ms"
read_timeout = 120
send_timeout = "1m30s"
fail_timeout = "0s"

[[upstream]]
name = "static"
servers = ["127.0.0.1:9100"]

[[route]]
host = "API.Example.COM"
path_prefix = "/v1/"
upstream = "api-v1.internal_2"

[[route]]
upstream = "static"

[log]
access_log = "/var/log/tlsfront/access.log"
level = "debug"

[limits]
max_header_bytes = "32k"
max_body_bytes = 0
keepalive_requests = 5

[timeouts]
handshake = "5s"
header = 20
keepalive = "2m"
send = "1h"
body = "45s"
)");
  EXPECT_EQ(c.path, "/etc/tlsfront/t.toml");
  EXPECT_EQ(c.workers, 4);

  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[0].address.host, "0.0.0.0");
  EXPECT_EQ(c.listeners[0].address.port, 443);
  EXPECT_EQ(c.listeners[0].backlog, 1024);
  EXPECT_EQ(c.listeners[1].address.host, "::1");
  EXPECT_EQ(c.listeners[1].address.port, 8443);
  EXPECT_EQ(c.listeners[1].backlog, 511);

  EXPECT_EQ(c.tls.protocols, std::vector<TlsVersion>{TlsVersion::Tls13});
  EXPECT_EQ(c.tls.ciphers, "ECDHE-RSA-AES128-GCM-SHA256");
  EXPECT_EQ(c.tls.ciphersuites, "TLS_AES_256_GCM_SHA384");
  EXPECT_EQ(c.tls.groups, "X25519");
  EXPECT_TRUE(c.tls.prefer_server_ciphers);
  EXPECT_EQ(c.tls.certificates.at(0).cert, "/etc/tlsfront/certs/chain.pem");
  EXPECT_EQ(c.tls.certificates.at(0).key, "/etc/keys/leaf.key");
  EXPECT_EQ(c.tls.certificates.at(0).cert_origin, "/etc/tlsfront/t.toml:17:1");
  EXPECT_EQ(c.tls.certificates.at(0).key_origin, "/etc/tlsfront/t.toml:18:1");

  ASSERT_EQ(c.upstreams.size(), 2u);
  const Upstream& api = c.upstreams[0];
  EXPECT_EQ(api.name, "api-v1.internal_2");
  ASSERT_EQ(api.servers.size(), 3u);
  EXPECT_EQ(api.servers[0].to_string(), "10.0.0.1:9000");
  EXPECT_EQ(api.servers[1].to_string(), "[2001:db8::2]:9001");
  EXPECT_EQ(api.servers[2].to_string(), "127.0.0.1:9002");
  EXPECT_EQ(api.keepalive, 0u);
  EXPECT_EQ(api.keepalive_timeout, 90s);
  EXPECT_EQ(api.keepalive_requests, 5000u);
  EXPECT_EQ(api.connect_timeout, 500ms);
  EXPECT_EQ(api.read_timeout, 120s);
  EXPECT_EQ(api.send_timeout, 90s);
  EXPECT_EQ(api.fail_timeout, 0ms);
  EXPECT_EQ(c.upstreams[1].name, "static");

  ASSERT_EQ(c.routes.size(), 2u);
  EXPECT_EQ(c.routes[0].host, "api.example.com");
  EXPECT_EQ(c.routes[0].path, "/v1/");
  EXPECT_EQ(c.routes[0].upstream, "api-v1.internal_2");
  EXPECT_EQ(c.routes[1].host, "");
  EXPECT_EQ(c.routes[1].path, "/");
  EXPECT_EQ(c.routes[1].upstream, "static");

  EXPECT_EQ(c.log.access_log, "/var/log/tlsfront/access.log");
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_EQ(c.limits.max_header_bytes, 32u * 1024);
  EXPECT_EQ(c.limits.max_body_bytes, 0u);
  EXPECT_EQ(c.limits.keepalive_requests, 5u);
  EXPECT_EQ(c.timeouts.handshake, 5s);
  EXPECT_EQ(c.timeouts.header, 20s);
  EXPECT_EQ(c.timeouts.keepalive, 2min);
  EXPECT_EQ(c.timeouts.send, 1h);
  EXPECT_EQ(c.timeouts.body, 45s);
}

TEST(Loader, DefaultsMatchConfigStructs) {
  Config c = load_ok(kMinimal, "t.toml");
  const Config d;
  const Upstream du;
  EXPECT_EQ(c.path, "t.toml");
  EXPECT_EQ(c.workers, 0);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].backlog, 511);
  EXPECT_EQ(c.tls.protocols, (std::vector<TlsVersion>{TlsVersion::Tls12, TlsVersion::Tls13}));
  EXPECT_EQ(c.tls.ciphers, d.tls.ciphers);
  EXPECT_EQ(c.tls.ciphersuites, d.tls.ciphersuites);
  EXPECT_EQ(c.tls.groups, "X25519:P-256");
  EXPECT_FALSE(c.tls.prefer_server_ciphers);
  EXPECT_EQ(c.tls.certificates.at(0).cert, "/pki/cert.pem");
  EXPECT_EQ(c.tls.certificates.at(0).cert_origin, "t.toml:5:1");
  EXPECT_EQ(c.tls.certificates.at(0).key_origin, "t.toml:6:1");
  ASSERT_EQ(c.upstreams.size(), 1u);
  const Upstream& u = c.upstreams[0];
  EXPECT_EQ(u.keepalive, 32u);
  EXPECT_EQ(u.keepalive_timeout, 60s);
  EXPECT_EQ(u.keepalive_requests, 1000u);
  EXPECT_EQ(u.connect_timeout, du.connect_timeout);
  EXPECT_EQ(u.read_timeout, du.read_timeout);
  EXPECT_EQ(u.send_timeout, du.send_timeout);
  EXPECT_EQ(u.fail_timeout, 10s);
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].host, "");
  EXPECT_EQ(c.routes[0].path, "/");
  EXPECT_EQ(c.log.access_log, "");
  EXPECT_EQ(c.log.level, "info");
  EXPECT_EQ(c.limits.max_header_bytes, 16u * 1024);
  EXPECT_EQ(c.limits.max_body_bytes, 1024u * 1024);
  EXPECT_EQ(c.limits.keepalive_requests, 1000u);
  EXPECT_EQ(load_error(with("[limits]\nkeepalive_requests = 0\n")).rfind("t.toml:15:1: limits.keepalive_requests: ", 0), 0u);
  EXPECT_EQ(c.timeouts.handshake, 10s);
  EXPECT_EQ(c.timeouts.header, 30s);
  EXPECT_EQ(c.timeouts.keepalive, 75s);
  EXPECT_EQ(c.timeouts.send, 60s);
  EXPECT_EQ(c.timeouts.body, 60s);
}

TEST(Loader, WorkersAutoAndRange) {
  EXPECT_EQ(load_ok("workers = \"auto\"\n" + std::string(kMinimal)).workers, 0);
  EXPECT_EQ(load_ok("workers = 256\n" + std::string(kMinimal)).workers, 256);
  EXPECT_EQ(load_error("workers = 0\n" + std::string(kMinimal)),
            "t.toml:1:1: workers: must be between 1 and 256, got 0");
  EXPECT_EQ(load_error("workers = 257\n" + std::string(kMinimal)),
            "t.toml:1:1: workers: must be between 1 and 256, got 257");
  EXPECT_EQ(load_error("workers = \"all\"\n" + std::string(kMinimal)),
            R"(t.toml:1:1: workers: expected "auto" or an integer 1..256, got "all")");
  EXPECT_EQ(load_error("workers = 1.5\n" + std::string(kMinimal)),
            R"(t.toml:1:1: workers: expected "auto" or an integer 1..256, got float)");
}

TEST(Loader, ShutdownTimeout) {
  EXPECT_EQ(load_ok(kMinimal).shutdown_timeout, 30s);
  EXPECT_EQ(load_ok("shutdown_timeout = \"2m\"\n" + std::string(kMinimal)).shutdown_timeout, 120s);
  EXPECT_EQ(load_ok("shutdown_timeout = 0\n" + std::string(kMinimal)).shutdown_timeout, 0s);
  EXPECT_EQ(load_error("shutdown_timeout = \"soon\"\n" + std::string(kMinimal)).rfind("t.toml:1:1: shutdown_timeout: ", 0),
            0u);
}

TEST(Loader, PidFile) {
  EXPECT_EQ(load_ok(kMinimal).pid_file, "");
  EXPECT_EQ(load_ok("pid_file = \"/run/tlsfront/t.pid\"\n" + std::string(kMinimal)).pid_file, "/run/tlsfront/t.pid");
  EXPECT_EQ(load_ok("pid_file = \"run/../t.pid\"\n" + std::string(kMinimal)).pid_file, "/etc/tlsfront/t.pid");
  EXPECT_EQ(load_error("pid_file = 1\n" + std::string(kMinimal)).rfind("t.toml:1:1: pid_file: ", 0), 0u);
}

TEST(Loader, RelativePathsResolveAgainstConfigDirectory) {
  std::string toml = R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "../build/dev-pki/localhost.chain.pem"
key = "./localhost.key"
[[upstream]]
name = "demo"
servers = ["127.0.0.1:9080"]
[[route]]
upstream = "demo"
[log]
access_log = "logs/../access.log"
)";
  Config r = load_ok(toml, "/srv/conf/main.toml");
  EXPECT_EQ(r.tls.certificates.at(0).cert, "/srv/build/dev-pki/localhost.chain.pem");
  EXPECT_EQ(r.tls.certificates.at(0).key, "/srv/conf/localhost.key");
  EXPECT_EQ(r.log.access_log, "/srv/conf/access.log");

  // A relative source name resolves against the current directory.
  Config rel = load_ok(toml, "conf/main.toml");
  std::filesystem::path cwd = std::filesystem::current_path();
  EXPECT_EQ(rel.tls.certificates.at(0).key, (cwd / "conf/localhost.key").lexically_normal().string());
  EXPECT_EQ(rel.tls.certificates.at(0).cert_origin, "conf/main.toml:4:1");

  // "" keeps access logging off rather than naming the directory.
  Config off = load_ok(with("[log]\naccess_log = \"\"\n"));
  EXPECT_EQ(off.log.access_log, "");
}

TEST(Loader, SyntaxErrorHasPosition) {
  EXPECT_EQ(load_error("workers = \n"),
            "t.toml:1:11: syntax error: Error while parsing key-value pair: expected value, saw '\\n'");
  EXPECT_EQ(load_error(with("[tls]\n")),
            "t.toml:14:1: syntax error: Error while parsing table header: cannot redefine existing table 'tls'");
}

TEST(Loader, UnknownKeyInEachTable) {
  EXPECT_EQ(load_error("colour = 1\n" + std::string(kMinimal)),
            R"(t.toml:1:1: colour: unknown key "colour")");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
  reuseport = true
)"),
            R"(t.toml:3:3: listen[0].reuseport: unknown key "reuseport")");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
stapling = true
certificate = "c"
)"),
            R"(t.toml:4:1: tls.stapling: unknown key "stapling")");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:1"]
[[upstream]]
name = "b"
weight = 2
zzz = 1
aaa = 1
)"),
            R"(t.toml:11:1: upstream[1].weight: unknown key "weight")");
  EXPECT_EQ(load_error(with("hosts = [\"a\"]\n")), R"(t.toml:14:1: route[0].hosts: unknown key "hosts")");
  // An https:// URL where an address belongs: said to be a URL, and how TLS to the servers is asked for.
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:1", "https://api.internal:443/"]
)"),
            R"(t.toml:8:27: upstream[0].servers[1]: invalid address "https://api.internal:443/" (a URL is not an address: )"
            R"(expected "host:port" without a scheme, e.g. "127.0.0.1:8080"); for TLS to the servers, set tls = true or )"
            R"(write an [upstream.tls] table)");
  EXPECT_EQ(load_error(with("[log]\nformat = \"json\"\n")),
            R"(t.toml:15:1: log.format: unknown key "format")");
  EXPECT_EQ(load_error(with("[limits]\nmax_headers = 10\n")),
            R"(t.toml:15:1: limits.max_headers: unknown key "max_headers")");
  EXPECT_EQ(load_error(with("[timeouts]\nidle = \"1s\"\n")),
            R"(t.toml:15:1: timeouts.idle: unknown key "idle")");
  // Keys that are not bare are quoted in the path.
  EXPECT_EQ(load_error(with("[timeouts]\n\"a b\" = 1\n")),
            R"(t.toml:15:1: timeouts."a b": unknown key "a b")");
}

TEST(Loader, WrongTypesNameTheExpectedType) {
  EXPECT_EQ(load_error(with("[log]\nlevel = 3\n")),
            "t.toml:15:1: log.level: expected a string, got integer");
  EXPECT_EQ(load_error(with("[tls]\n")),  // syntax error: [tls] already defined
            "t.toml:14:1: syntax error: Error while parsing table header: cannot redefine existing table 'tls'");
  EXPECT_EQ(load_error(R"([[listen]]
address = 8443
)"),
            "t.toml:2:1: listen[0].address: expected a string, got integer");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
backlog = "lots"
)"),
            "t.toml:3:1: listen[0].backlog: expected an integer, got string");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
prefer_server_ciphers = "yes"
)"),
            "t.toml:4:1: tls.prefer_server_ciphers: expected a boolean, got string");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
protocols = "TLSv1.3"
)"),
            "t.toml:4:1: tls.protocols: expected an array, got string");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
protocols = ["TLSv1.2", 1.3]
)"),
            "t.toml:4:25: tls.protocols[1]: expected a string, got float");
  EXPECT_EQ(load_error(with("[timeouts]\nsend = 1.5\n")),
            R"(t.toml:15:1: timeouts.send: expected a duration string (e.g. "30s") or integer seconds, got float)");
  EXPECT_EQ(load_error(with("[limits]\nmax_body_bytes = true\n")),
            R"(t.toml:15:1: limits.max_body_bytes: expected a size string (e.g. "16k") or integer bytes, got boolean)");
  EXPECT_EQ(load_error(R"([listen]
address = "127.0.0.1:8443"
)"),
            "t.toml:1:2: listen: expected an array of tables ([[listen]]), got table");
  EXPECT_EQ(load_error("tls = 1\n[[listen]]\naddress = \"127.0.0.1:8443\"\n"),
            "t.toml:1:1: tls: expected a table ([tls]), got integer");
  EXPECT_EQ(load_error("listen = [\"127.0.0.1:8443\"]\n"),
            "t.toml:1:11: listen[0]: expected a table, got string");
}

TEST(Loader, BadDurationAndSize) {
  std::string toml = R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
    name = "demo"
    servers = ["127.0.0.1:9080"]
    keepalive_timeout = "5x"
)";
  EXPECT_EQ(load_error(toml),
            R"(t.toml:9:5: upstream[0].keepalive_timeout: invalid duration "5x" (expected e.g. "500ms", "30s", "5m", "1h", "1d"))");
  EXPECT_EQ(load_error(with("[timeouts]\nhandshake = \"0s\"\n")),
            R"(t.toml:15:1: timeouts.handshake: must be greater than 0, got "0s")");
  EXPECT_EQ(load_error(with("[timeouts]\nheader = -1\n")),
            "t.toml:15:1: timeouts.header: invalid duration -1 (negative)");
  EXPECT_EQ(load_error(with("[timeouts]\nkeepalive = 9223372036854775807\n")),
            "t.toml:15:1: timeouts.keepalive: invalid duration 9223372036854775807 (too large)");
  EXPECT_EQ(load_error(with("[limits]\nmax_header_bytes = \"512\"\n")),
            R"(t.toml:15:1: limits.max_header_bytes: must be between 1k and 1m, got "512")");
  EXPECT_EQ(load_error(with("[limits]\nmax_header_bytes = 2097152\n")),
            "t.toml:15:1: limits.max_header_bytes: must be between 1k and 1m, got 2097152");
  EXPECT_EQ(load_error(with("[limits]\nmax_body_bytes = \"10mb\"\n")),
            R"(t.toml:15:1: limits.max_body_bytes: invalid size "10mb" (expected e.g. "512", "16k", "10m", "1g"))");
  EXPECT_EQ(load_error(with("[limits]\nmax_body_bytes = -1\n")),
            "t.toml:15:1: limits.max_body_bytes: invalid size -1 (negative)");
  Config c = load_ok(with("[limits]\nmax_header_bytes = \"1M\"\nmax_body_bytes = \"10m\"\n"));
  EXPECT_EQ(c.limits.max_header_bytes, 1024u * 1024);
  EXPECT_EQ(c.limits.max_body_bytes, 10u * 1024 * 1024);
}

TEST(Loader, MissingRequiredTablesAndKeys) {
  EXPECT_EQ(load_error(""), "t.toml:1:1: listen: missing required table [[listen]]");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\n"),
            "t.toml:1:1: tls: missing required table [tls]");
  // No [[upstream]] is fine (a site of file routes); [[route]] is required.
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n"),
            "t.toml:1:1: route: missing required table [[route]]");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:1"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:1"]
)"),
            "t.toml:1:1: route: missing required table [[route]]");
  // A missing key points at its table's header.
  EXPECT_EQ(load_error("\n[[listen]]\nbacklog = 5\n"),
            "t.toml:2:1: listen[0].address: missing required key");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\n\n[tls]\nkey = \"k\"\n"),
            "t.toml:4:1: tls.certificate: missing required key");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\n"),
            "t.toml:3:1: tls.key: missing required key");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"\"\nkey = \"k\"\n"),
            "t.toml:4:1: tls.certificate: must not be empty");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:1"
[tls]
certificate = "c"
key = "k"
[[upstream]]
servers = ["127.0.0.1:1"]
)"),
            "t.toml:6:1: upstream[0].name: missing required key");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:1"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
)"),
            "t.toml:6:1: upstream[0].servers: missing required key");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:1"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = []
)"),
            R"(t.toml:8:1: upstream[0].servers: must list at least one "host:port")");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:1"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:1"]
[[route]]
host = "a"
)"),
            "t.toml:9:1: route[0].upstream: missing required key (a route has one of upstream, return, redirect, root and alias)");
}

TEST(Loader, TlsProtocols) {
  std::string head = "[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n";
  EXPECT_EQ(load_error(head + "protocols = []\n"), "t.toml:6:1: tls.protocols: must not be empty");
  EXPECT_EQ(load_error(head + "protocols = [\"TLSv1.3\", \"TLSv1.1\"]\n"),
            R"(t.toml:6:25: tls.protocols[1]: unknown protocol "TLSv1.1" (expected "TLSv1.2" or "TLSv1.3"))");
  EXPECT_EQ(load_error(head + "protocols = [\"TLSv1.3\", \"TLSv1.3\"]\n"),
            R"(t.toml:6:25: tls.protocols[1]: duplicate protocol "TLSv1.3")");
  EXPECT_EQ(load_error(head + "ciphers = \"\"\n"), "t.toml:6:1: tls.ciphers: must not be empty");
}

TEST(Loader, UpstreamNames) {
  std::string head = "[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n";
  EXPECT_EQ(load_error(head + R"([[upstream]]
name = "api"
servers = ["127.0.0.1:1"]
[[upstream]]
name = "web"
servers = ["127.0.0.1:2"]
[[upstream]]
  name = "api"
  servers = ["127.0.0.1:3"]
)"),
            R"(t.toml:13:3: upstream[2].name: duplicate upstream name "api" (first defined at t.toml:7:1))");
  EXPECT_EQ(load_error(head + "[[upstream]]\nname = \"my api\"\nservers = [\"127.0.0.1:1\"]\n"),
            R"(t.toml:7:1: upstream[0].name: invalid upstream name "my api" (allowed: letters, digits, "_", ".", "-"))");
  EXPECT_EQ(load_error(head + "[[upstream]]\nname = \"\"\nservers = [\"127.0.0.1:1\"]\n"),
            R"(t.toml:7:1: upstream[0].name: invalid upstream name "" (allowed: letters, digits, "_", ".", "-"))");
  EXPECT_EQ(load_error(head + "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\nkeepalive = -1\n"),
            "t.toml:9:1: upstream[0].keepalive: must be between 0 and 2147483647, got -1");
  EXPECT_EQ(load_error(head + "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\nkeepalive_requests = 0\n"),
            "t.toml:9:1: upstream[0].keepalive_requests: must be at least 1, got 0");
  EXPECT_EQ(load_error(head + "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\nconnect_timeout = 0\n"),
            "t.toml:9:1: upstream[0].connect_timeout: must be greater than 0, got 0");
}

TEST(Loader, UpstreamProtocol) {
  std::string head =
      "[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n"
      "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\n";
  const std::string route = "[[route]]\nupstream = \"a\"\n";
  EXPECT_EQ(load_ok(head + route).upstreams.at(0).protocol, UpstreamProtocol::Http1);
  EXPECT_EQ(load_ok(head + "protocol = \"http/1.1\"\n" + route).upstreams.at(0).protocol, UpstreamProtocol::Http1);
  EXPECT_EQ(load_ok(head + "protocol = \"h2c\"\n" + route).upstreams.at(0).protocol, UpstreamProtocol::H2c);
  EXPECT_EQ(load_ok(head + "protocol = \"h2\"\n" + route).upstreams.at(0).protocol, UpstreamProtocol::H2);
  EXPECT_EQ(load_error(head + "protocol = \"HTTP/2\"\n"),
            R"(t.toml:9:1: upstream[0].protocol: unknown protocol "HTTP/2" (expected "http/1.1", "h2c" or "h2"))");
  EXPECT_EQ(load_error(head + "protocol = 2\n"), "t.toml:9:1: upstream[0].protocol: expected a string, got integer");
  EXPECT_EQ(load_error(head + "protocol = \"h2c\"\nkeepalive = 0\n"),
            "t.toml:10:1: upstream[0].keepalive: must be >= 1 with protocol = \"h2c\" (it bounds the HTTP/2 "
            "connections per worker per server)");
}

TEST(Loader, UpstreamH2Ping) {
  std::string head =
      "[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n"
      "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\n";
  const std::string route = "[[route]]\nupstream = \"a\"\n";
  const Upstream off = load_ok(head + "protocol = \"h2c\"\n" + route).upstreams.at(0);
  EXPECT_EQ(off.h2_ping_interval, Millis{0});  // off by default
  EXPECT_EQ(off.h2_ping_timeout, 5s);
  const Upstream on =
      load_ok(head + "protocol = \"h2c\"\nh2_ping_interval = \"30s\"\nh2_ping_timeout = \"2s\"\n" + route)
          .upstreams.at(0);
  EXPECT_EQ(on.h2_ping_interval, 30s);
  EXPECT_EQ(on.h2_ping_timeout, 2s);
  EXPECT_EQ(load_error(head + "h2_ping_interval = \"30s\"\n"),
            "t.toml:9:1: upstream[0].h2_ping_interval: only applies to protocol = \"h2c\" or \"h2\" (an HTTP/1.1 "
            "connection has no PING)");
  EXPECT_EQ(load_error(head + "protocol = \"http/1.1\"\nh2_ping_timeout = \"1s\"\n"),
            "t.toml:10:1: upstream[0].h2_ping_timeout: only applies to protocol = \"h2c\" or \"h2\" (an HTTP/1.1 "
            "connection has no PING)");
  EXPECT_EQ(load_error(head + "protocol = \"h2c\"\nh2_ping_interval = \"30s\"\nh2_ping_timeout = 0\n"),
            "t.toml:11:1: upstream[0].h2_ping_timeout: must be greater than 0, got 0");
  EXPECT_EQ(load_error(head + "protocol = \"h2c\"\nh2_ping_interval = \"soon\"\n"),
            "t.toml:10:1: upstream[0].h2_ping_interval: invalid duration \"soon\" (expected e.g. \"500ms\", \"30s\", "
            "\"5m\", \"1h\", \"1d\")");
}

TEST(Loader, Routes) {
  EXPECT_EQ(load_error(with("[[route]]\nhost = \"example.com\"\n  upstream = \"nope\"\n")),
            R"(t.toml:16:3: route[1].upstream: unknown upstream "nope" (no [[upstream]] has this name))");
  EXPECT_EQ(load_error(with("path_prefix = \"api\"\n")),
            R"(t.toml:14:1: route[0].path_prefix: must start with "/", got "api")");
  EXPECT_EQ(load_error(with("path_prefix = \"\"\n")),
            R"(t.toml:14:1: route[0].path_prefix: must start with "/", got "")");
  EXPECT_EQ(load_error(with("host = \"a b\"\n")),
            R"(t.toml:14:1: route[0].host: invalid host "a b" (no spaces, control characters or "/"))");
  EXPECT_EQ(load_error(with("[log]\nlevel = \"trace\"\n")),
            R"(t.toml:15:1: log.level: unknown level "trace" (expected "debug", "info", "warn" or "error"))");
}

TEST(Loader, InlineTablesWork) {
  Config c = load_ok(R"(listen = [{ address = "127.0.0.1:8443" }]
tls = { certificate = "/c", key = "/k" }
upstream = [{ name = "a", servers = ["127.0.0.1:1"] }]
route = [{ upstream = "a" }]
)");
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.routes[0].upstream, "a");
  EXPECT_EQ(load_error(R"(listen = [{ address = "127.0.0.1:8443", port = 1 }])"),
            R"(t.toml:1:41: listen[0].port: unknown key "port")");
}

class LoadFileTest : public ::testing::Test {
 protected:
  TempDir tmp_{"tlsfront-cfg"};
  const std::filesystem::path dir_ = tmp_.path();
};

TEST_F(LoadFileTest, ResolvesPathsAgainstFileDirectory) {
  std::filesystem::create_directories(dir_ / "conf");
  std::filesystem::path file = dir_ / "conf" / "x.toml";
  {
    std::ofstream out(file);
    out << R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "../build/dev-pki/localhost.chain.pem"
key = "../build/dev-pki/localhost.key"
[[upstream]]
name = "demo"
servers = ["127.0.0.1:9080"]
[[route]]
upstream = "demo"
[log]
access_log = "../build/logs/access.log"
)";
  }
  Result<Config> c = load_file(file.string());
  ASSERT_TRUE(c.ok()) << c.error().detail;
  EXPECT_EQ(c->path, file.string());
  EXPECT_EQ(c->tls.certificates.at(0).cert, (dir_ / "build/dev-pki/localhost.chain.pem").string());
  EXPECT_EQ(c->tls.certificates.at(0).key, (dir_ / "build/dev-pki/localhost.key").string());
  EXPECT_EQ(c->log.access_log, (dir_ / "build/logs/access.log").string());
  EXPECT_EQ(c->tls.certificates.at(0).cert_origin, file.string() + ":4:1");
}

TEST_F(LoadFileTest, ErrorsNameTheFileAsGiven) {
  std::filesystem::path file = dir_ / "bad.toml";
  {
    std::ofstream out(file);
    out << "[[listen]]\naddress = \"127.0.0.1:8443\"\nbacklog = \"x\"\n";
  }
  Result<Config> c = load_file(file.string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::Config);
  EXPECT_EQ(c.error().detail, file.string() + ":3:1: listen[0].backlog: expected an integer, got string");
}

TEST_F(LoadFileTest, MissingFile) {
  std::string path = (dir_ / "nope.toml").string();
  Result<Config> c = load_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::Config);
  EXPECT_EQ(c.error().detail, path + ": cannot read config file: No such file or directory");
}

}  // namespace
}  // namespace tlsfront::config
