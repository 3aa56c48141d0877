// Integration harness, the process half (see harness.h): files, ports,
// child processes, the backend and proxy launchers, JSON log fields, the fixture.
// The clients live in clients.cc.
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tlsfront::itest {
namespace {

// Process-wide setup: writes to a closed socket must fail with EPIPE, not kill
// the test binary; libcurl wants its global init before any thread runs.
struct GlobalInit {
  GlobalInit() {
    ::signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
  }
};
const GlobalInit kGlobalInit;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string pki(std::string_view file) { return std::string(TLSFRONT_TEST_PKI_DIR) + "/" + std::string(file); }

std::optional<int> logged_port(std::string_view log, std::string_view before, std::string_view after) {
  for (size_t at = log.find(before); at != std::string_view::npos; at = log.find(before, at + 1)) {
    size_t end = at + before.size();
    int port = 0;
    while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end])) && port < 65536) {
      port = port * 10 + (log[end++] - '0');
    }
    if (end > at + before.size() && port > 0 && port < 65536 && log.substr(end).starts_with(after)) return port;
  }
  return std::nullopt;
}

// ---- Backend ------------------------------------------------------------------

Backend::Backend(const TempDir& dir, std::string host, int port, std::string tag)
    : dir_(dir), host_(std::move(host)), tag_(std::move(tag)), record_dir_(dir.file("records" + tag_)), port_(port) {}

bool Backend::start() {
  std::string port_file = dir_.file("backend" + tag_ + ".port");
  std::vector<std::string> argv{TLSFRONT_BACKEND_BINARY, "--listen", host_ + ":" + std::to_string(port_),
                                "--port-file", port_file, "--record", record_dir_};
  argv.insert(argv.end(), args_.begin(), args_.end());
  std::remove(port_file.c_str());  // a restart waits for the new one
  if (!process_.start(argv, dir_.file("backend" + tag_ + ".out"), dir_.file("backend" + tag_ + ".err"))) {
    return false;
  }
  bool ok = wait_until([&] {
    std::string s = read_file(port_file);
    return !s.empty() && s.back() == '\n';
  });
  if (!ok) {
    ADD_FAILURE() << "backend did not write its port file; stderr: " << process_.err();
    return false;
  }
  port_ = std::atoi(read_file(port_file).c_str());
  return port_ > 0;
}

std::vector<std::string> Backend::records(std::string_view ext) const {
  std::vector<std::string> out;
  std::error_code ec;
  std::string suffix = "." + std::string(ext);
  for (const auto& e : std::filesystem::directory_iterator(record_dir_, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > suffix.size() && name[0] != '.' &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Backend::wait_requests(size_t n, milliseconds timeout) const {
  wait_until([&] { return count("req") >= n; }, timeout);
  std::vector<std::string> out;
  for (const auto& name : records("req")) out.push_back(read_record(name));
  return out;
}

// ---- Proxy ------------------------------------------------------------------------

std::string make_config(const ProxyOptions& o, int port, const std::string& access_log) {
  std::string c;
  c += "workers = " + std::to_string(o.workers) + "\n" + o.top_level + "\n";
  c += "[[listen]]\naddress = \"127.0.0.1:" + std::to_string(port) + "\"\n" + o.listen_extra + "\n";
  if (o.cleartext)
    c += "[[listen]]\naddress = \"" + std::string(kCleartextIp) + ":0\"\ntls = false\n" + *o.cleartext + "\n";
  // The test root is not in the system store: it is the chain's trust anchor.
  c += "[tls]\n";
  if (o.certificates.empty()) c += "certificate = \"" + o.certificate + "\"\nkey = \"" + o.key + "\"\n";
  c += "trusted_ca = \"" + pki("root.pem") + "\"\n" + o.tls_extra + "\n" + o.certificates + "\n";
  c += "[[upstream]]\nname = \"backend\"\nservers = [";
  for (size_t i = 0; i < o.upstream_servers.size(); ++i) {
    const std::string& server = o.upstream_servers[i];
    c += i ? ", " : "";
    c += server.starts_with("{") ? server : "\"" + server + "\"";  // a table as written, or an address
  }
  c += "]\n" + o.upstream_extra + "\n";
  if (o.routes.empty()) {
    c += "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n\n";
  } else {
    c += o.routes + "\n";
  }
  c += "[log]\naccess_log = \"" + access_log + "\"\n\n";
  c += o.extra;
  // Never the default 127.0.0.1:9901: tests run in parallel.
  if (o.admin_port < 0) {
    c += "\n[admin]\nenabled = false\n";
  } else {
    c += "\n[admin]\naddress = \"127.0.0.1:" + std::to_string(o.admin_port) + "\"\n";
  }
  return c;
}

Proxy::Proxy(const TempDir& dir) : dir_(dir) {}

bool Proxy::start(const ProxyOptions& o) {
  config_path_ = dir_.file("tlsfront.toml");
  access_log_ = dir_.file("access.log");
  // Port 0: the kernel picks ports no other test holds, and the log says
  // which (the admin line comes before the listening line).
  port_ = 0;
  admin_port_ = o.admin_port > 0 ? o.admin_port : 0;
  write_file(config_path_, o.config_text ? *o.config_text : make_config(o, kAnyPort, access_log_));
  process_.set_open_files_limit(o.open_files_limit);
  if (!process_.start({TLSFRONT_BINARY, "--config", config_path_}, dir_.file("tlsfront.out"),
                      dir_.file("tlsfront.err"))) {
    ADD_FAILURE() << "fork failed";
    return false;
  }
  bool exited = false;
  bool ready = wait_until([&] {
    if (!process_.running()) {
      exited = true;
      return true;
    }
    const std::string err = process_.err();
    const auto listening = logged_port(err, "listening on 127.0.0.1:", " (");
    if (!listening) return false;
    if (o.admin_port == 0) {
      const auto admin = logged_port(err, "admin: http://127.0.0.1:", "/metrics");
      if (!admin) return false;
      admin_port_ = *admin;
    }
    if (o.cleartext) {
      const auto cleartext = logged_port(err, "listening on " + std::string(kCleartextIp) + ":", " (");
      if (!cleartext) return false;
      cleartext_port_ = *cleartext;
    }
    port_ = *listening;
    TlsClient probe;
    return probe.connect(port_, TlsOptions{}, milliseconds(1'000));
  });
  if (ready && !exited) return true;
  ADD_FAILURE() << "tlsfront did not become ready" << (exited ? " (it exited)" : "") << "; config:\n"
                << read_file(config_path_) << "\nstderr:\n"
                << process_.err();
  return false;
}

std::vector<std::string> Proxy::wait_log_lines(size_t n, milliseconds timeout) const {
  auto lines = [&] {
    std::vector<std::string> out;
    std::string s = read_file(access_log_);
    size_t pos = 0;
    while (true) {
      size_t nl = s.find('\n', pos);
      if (nl == std::string::npos) break;
      out.push_back(s.substr(pos, nl - pos));
      pos = nl + 1;
    }
    return out;
  };
  std::vector<std::string> out;
  wait_until([&] { return (out = lines()).size() >= n; }, timeout);
  return out;
}

// ---- JSON ---------------------------------------------------------------------------

std::optional<std::string> json_raw(std::string_view s, std::string_view key) {
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  auto string_end = [&](size_t start) -> size_t {  // s[start] == '"'; index past the closing quote
    size_t j = start + 1;
    while (j < s.size()) {
      if (s[j] == '\\') {
        j += 2;
        continue;
      }
      if (s[j] == '"') return j + 1;
      ++j;
    }
    return std::string_view::npos;
  };
  ws();
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  ++i;
  while (true) {
    ws();
    if (i >= s.size() || s[i] == '}' || s[i] != '"') return std::nullopt;
    size_t kend = string_end(i);
    if (kend == std::string_view::npos) return std::nullopt;
    std::string_view k = s.substr(i + 1, kend - i - 2);
    i = kend;
    ws();
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    ++i;
    ws();
    size_t vstart = i;
    if (i < s.size() && s[i] == '"') {
      i = string_end(i);
      if (i == std::string_view::npos) return std::nullopt;
    } else if (i < s.size() && (s[i] == '{' || s[i] == '[')) {
      int depth = 0;
      while (i < s.size()) {
        if (s[i] == '"') {
          i = string_end(i);
          if (i == std::string_view::npos) return std::nullopt;
          continue;
        }
        if (s[i] == '{' || s[i] == '[') ++depth;
        if (s[i] == '}' || s[i] == ']') {
          if (--depth == 0) {
            ++i;
            break;
          }
        }
        ++i;
      }
    } else {
      while (i < s.size() && s[i] != ',' && s[i] != '}') ++i;
    }
    std::string_view v = trim(s.substr(vstart, i - vstart));
    if (k == key) return std::string(v);
    ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    return std::nullopt;
  }
}

std::optional<std::string> json_string(std::string_view line, std::string_view key) {
  auto raw = json_raw(line, key);
  if (!raw || raw->size() < 2 || raw->front() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < raw->size(); ++i) {
    char c = (*raw)[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = (*raw)[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        unsigned cp = static_cast<unsigned>(std::stoul(raw->substr(i + 1, 4), nullptr, 16));
        i += 4;
        if (cp < 0x80) {
          out += static_cast<char>(cp);
        } else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: out += e; break;
    }
  }
  return out;
}

// ---- fixture ------------------------------------------------------------------------

int listen_loopback(int backlog, int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
}

std::map<std::string, double> parse_metrics(std::string_view exposition) {
  std::map<std::string, double> out;
  std::istringstream in{std::string(exposition)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    const bool fresh = out.emplace(line.substr(0, sp), std::stod(line.substr(sp + 1))).second;
    EXPECT_TRUE(fresh) << "duplicate series " << line.substr(0, sp);
  }
  return out;
}

std::map<std::string, double> scrape_metrics(int admin_port) {
  const std::string r = plain_request(admin_port, "GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n");
  const size_t body = r.find("\r\n\r\n");
  if (r.rfind("HTTP/1.1 200 ", 0) != 0 || body == std::string::npos) return {};
  return parse_metrics(std::string_view(r).substr(body + 4));
}

std::string plain_request(int port, const std::string& request, milliseconds timeout, const char* ip) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    ::close(fd);
    return "";
  }
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    const auto deadline = Clock::now() + timeout;
    char buf[16 * 1024];
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

bool wait_tls_ready(int port, milliseconds timeout) {
  return wait_until(
      [&] {
        TlsClient probe;
        return probe.connect(port, TlsOptions{}, milliseconds(1'000));
      },
      timeout);
}

LoadLoop::LoadLoop(std::function<void(int, const Record&)> batch) {
  thread_ = std::thread([this, batch = std::move(batch)] {
    const Record record = [this](const HttpResponse& r) {
      if (r.status == 200) {
        ok_.fetch_add(1);
        return;
      }
      if (failed_.fetch_add(1) == 0) {
        std::lock_guard lock(mu_);
        first_failure_ = std::to_string(r.status) + " " + r.error;
      }
    };
    for (int round = 0; !stop_.load(); ++round) batch(round, record);
  });
}

bool LoadLoop::wait_ok(int n, milliseconds timeout) const {
  const int target = ok_.load() + n;
  return wait_until([&] { return ok_.load() >= target; }, timeout);
}

void LoadLoop::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string LoadLoop::first_failure() const {
  std::lock_guard lock(mu_);
  return first_failure_;
}

void ProxyTest::SetUp() { ASSERT_TRUE(backend_.start()); }

void ProxyTest::TearDown() {
  bool started = proxy_.process().pid() > 0;
  ExitStatus st = proxy_.stop();
  backend_.stop();
  if (started) {
    EXPECT_TRUE(st.exited && st.code == 0)
        << "tlsfront did not exit 0 on SIGTERM (exited=" << st.exited << " code=" << st.code
        << " signal=" << st.signal << ")";
  }
  // TLSFRONT_IT_VERBOSE=1 prints the proxy's stderr and access log for passing tests too.
  if (HasFailure() || std::getenv("TLSFRONT_IT_VERBOSE") != nullptr) {
    std::string err = proxy_.process().err();
    if (err.size() > 4000) err = err.substr(err.size() - 4000);
    std::cerr << "---- tlsfront stderr (tail) ----\n" << err << "\n---- access log ----\n"
              << read_file(proxy_.access_log()) << "----\n";
  }
}

bool ProxyTest::start_proxy(ProxyOptions o) {
  if (o.upstream_servers.empty()) o.upstream_servers.push_back(backend_.address());
  return proxy_.start(o);
}

void ProxyTest::reload_proxy(ProxyOptions o, int generation) {
  if (o.upstream_servers.empty()) o.upstream_servers.push_back(backend_.address());
  write_file(proxy_.config_path(), make_config(o, kAnyPort, proxy_.access_log()));
  proxy_.process().signal(SIGHUP);
  const std::string live = "reload: generation " + std::to_string(generation) + " is live";
  ASSERT_TRUE(wait_until([&] { return proxy_.process().err().find(live) != std::string::npos; }))
      << proxy_.process().err();
}

}  // namespace tlsfront::itest
