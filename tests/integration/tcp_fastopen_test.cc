// [[listen]] tcp_fastopen (RFC 7413): the listener serves a ClientHello sent
// in the SYN. The server side of TCP Fast Open needs net.ipv4.tcp_fastopen
// bit 0x2, which a test must not set on this machine's network namespace: so
// tlsfront and its client run in a private network and PID namespace (root
// only) whose own sysctl the script sets. `tlsfront probe` is the client (it
// requests TFO on every connection: the first fetches the cookie, the later
// ones carry data in the SYN). The kernel's TcpExtTCPFastOpenPassive counter
// (/proc/net/netstat, per network namespace) counts SYNs whose data the
// listener accepted. Everything in the PID namespace dies with its shell, and
// the shell stops tlsfront by PID.
#include <unistd.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

constexpr int kPort = 18443;  // any port: the network namespace is the test's own

// The shell script run inside the namespace: `sysctl` for
// net.ipv4.tcp_fastopen, tlsfront on `config`, two probes, then
// "passive BEFORE AFTER" on stdout.
std::string namespace_script(int sysctl, const std::string& config, const std::string& err) {
  const std::string p = std::to_string(kPort);
  return "set -e; ip link set lo up; sysctl -qw net.ipv4.tcp_fastopen=" + std::to_string(sysctl) + "; " +
         "passive() { awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) n[i] = $i; h = 1 } else "
         "for (i = 2; i <= NF; i++) if (n[i] == \"TCPFastOpenPassive\") print $i }' /proc/net/netstat; }; " +
         TLSFRONT_BINARY + " --config " + config + " 2>" + err + " & pid=$!; trap 'kill $pid; wait $pid' EXIT; " +
         "i=0; until (exec 3<>/dev/tcp/127.0.0.1/" + p +
         ") 2>/dev/null; do i=$((i+1)); [ $i -lt 200 ]; sleep 0.05; done; " + "before=$(passive); " + TLSFRONT_BINARY +
         " probe --count 2 --no-staple-ok --timeout 5s --ca " + pki("root.pem") + " --resolve localhost:" + p +
         ":127.0.0.1 https://localhost:" + p + "/ >&2 || true; echo passive $before $(passive)";
}

class TcpFastOpen : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (unshare --net --pid)";
    RunResult check = run_command(dir_, {"/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", "/bin/true"});
    if (check.status.code != 0) GTEST_SKIP() << "unshare --net --pid failed: " << check.err;
  }
  // Runs the script with `listen_extra` in [[listen]]; `before`/`after` are
  // the passive TFO counter around the probes.
  RunResult run(int sysctl, const std::string& listen_extra, long& before, long& after) {
    ProxyOptions o;
    o.listen_extra = listen_extra;
    o.routes = "[[route]]\nreturn = { status = 200, body = \"ok\" }\n";
    o.admin_port = -1;
    o.upstream_servers = {"127.0.0.1:1"};  // never used: the route answers itself
    std::string conf = make_config(o, kPort, dir_.file("access.log"));
    write_file(dir_.file("tfo.toml"), conf);
    RunResult r = run_command(dir_,
                              {"/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", "/bin/bash", "-c",
                               namespace_script(sysctl, dir_.file("tfo.toml"), dir_.file("tfo.err"))},
                              milliseconds(60'000));
    before = after = -1;
    const size_t at = r.out.rfind("passive ");
    if (at != std::string::npos) std::sscanf(r.out.c_str() + at, "passive %ld %ld", &before, &after);
    return r;
  }
};

TEST_F(TcpFastOpen, DefaultListenerAcceptsDataInTheSynWhenTheSysctlAllowsIt) {
  long before = 0, after = 0;
  RunResult r = run(3, "", before, after);
  const std::string err = read_file(dir_.file("tfo.err"));
  EXPECT_EQ(r.status.code, 0) << r.err << err;
  ASSERT_GE(before, 0) << r.out << r.err;
  EXPECT_GT(after, before) << r.out << r.err << err;
  EXPECT_NE(r.err.find("HTTP/1.1 200"), std::string::npos) << r.err;
  EXPECT_EQ(err.find("TCP Fast Open is off"), std::string::npos) << err;
}

TEST_F(TcpFastOpen, ExplicitQueueLengthIsUsed) {
  long before = 0, after = 0;
  RunResult r = run(3, "tcp_fastopen = 16\n", before, after);
  EXPECT_EQ(r.status.code, 0) << r.err << read_file(dir_.file("tfo.err"));
  ASSERT_GE(before, 0) << r.out << r.err;
  EXPECT_GT(after, before) << r.out << r.err;
}

TEST_F(TcpFastOpen, ZeroTurnsItOff) {
  long before = 0, after = 0;
  RunResult r = run(3, "tcp_fastopen = 0\n", before, after);
  EXPECT_EQ(r.status.code, 0) << r.err;
  ASSERT_GE(before, 0) << r.out << r.err;
  EXPECT_EQ(after, before) << r.out << r.err;
  EXPECT_EQ(read_file(dir_.file("tfo.err")).find("TCP Fast Open is off"), std::string::npos);
}

// Client-only sysctl (1): the default is off, with one warning naming it.
TEST_F(TcpFastOpen, AutoIsOffWithOneWarningWhenTheKernelRefusesServerSide) {
  long before = 0, after = 0;
  RunResult r = run(1, "", before, after);
  const std::string err = read_file(dir_.file("tfo.err"));
  EXPECT_EQ(r.status.code, 0) << r.err << err;
  EXPECT_EQ(after, before) << r.out << r.err;
  const size_t first = err.find("TCP Fast Open is off: net.ipv4.tcp_fastopen is 1");
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("TCP Fast Open is off", first + 1), std::string::npos) << err;
}

}  // namespace
}  // namespace tlsfront::itest
