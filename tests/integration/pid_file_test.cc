// pid_file with the real binary: the file names the serving process (its
// SIGHUP reloads), a second instance with the same pid_file refuses to start
// and harms nothing, --pid-file overrides the key (also across reloads,
// which then name no restart-only change), and a graceful stop removes it.
#include <signal.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class PidFile : public ProxyTest {
 protected:
  bool stderr_has(const std::string& s) {
    return wait_until([&] { return proxy_.process().err().find(s) != std::string::npos; });
  }
  std::string pid_path() const { return dir_.path() + "/tlsfront.pid"; }
  pid_t file_pid() const {
    const std::string s = file_exists(pid_path()) ? read_file(pid_path()) : "";
    return s.empty() ? -1 : static_cast<pid_t>(std::stol(s));
  }
};

TEST_F(PidFile, NamesTheServingProcessAndIsRemovedOnStop) {
  ProxyOptions o;
  o.top_level = "pid_file = \"tlsfront.pid\"\n";  // relative: next to the config file
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(read_file(pid_path()), std::to_string(proxy_.process().pid()) + "\n");

  // `kill -HUP $(cat pid_file)` reloads this instance.
  ASSERT_EQ(::kill(file_pid(), SIGHUP), 0);
  ASSERT_TRUE(stderr_has("reload: generation 2 is live")) << proxy_.process().err();

  // A second instance with the same pid_file (its own port and log) refuses.
  const std::string other = dir_.path() + "/other.toml";
  o.upstream_servers = {backend_.address()};
  write_file(other, make_config(o, kAnyPort, dir_.path() + "/other.log"));
  RunResult second = run_command(dir_, {TLSFRONT_BINARY, "--config", other});
  EXPECT_EQ(second.status.code, 1) << second.err;
  EXPECT_NE(second.err.find("names PID " + std::to_string(proxy_.process().pid()) + ", a running process (tlsfront)"),
            std::string::npos)
      << second.err;
  EXPECT_EQ(file_pid(), proxy_.process().pid());  // untouched
  EXPECT_EQ(http(port(), {.path = "/still"}).status, 200);

  EXPECT_EQ(proxy_.stop().code, 0);
  EXPECT_FALSE(file_exists(pid_path()));
}

TEST_F(PidFile, CommandLineOverridesTheKeyAcrossReloads) {
  ProxyOptions o;
  o.top_level = "pid_file = \"from-config.pid\"\n";
  o.upstream_servers = {backend_.address()};
  const std::string config = dir_.path() + "/t.toml";
  write_file(config, make_config(o, kAnyPort, dir_.path() + "/t.log"));
  // --test checks the directory it would write in.
  RunResult bad = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", config, "--pid-file",
                                     dir_.path() + "/missing/t.pid"});
  EXPECT_EQ(bad.status.code, 1);
  EXPECT_NE(bad.err.find("directory " + dir_.path() + "/missing"), std::string::npos) << bad.err;

  Process p;
  ASSERT_TRUE(p.start({TLSFRONT_BINARY, "--config", config, "--pid-file", pid_path()}, dir_.path() + "/out",
                      dir_.path() + "/err"));
  ASSERT_TRUE(wait_until([&] { return file_exists(pid_path()); })) << p.err();
  EXPECT_EQ(file_pid(), p.pid());
  EXPECT_FALSE(file_exists(dir_.path() + "/from-config.pid"));
  p.signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return p.err().find("reload: generation 2 is live") != std::string::npos; }))
      << p.err();
  EXPECT_EQ(p.err().find("pid_file changed"), std::string::npos) << p.err();
  EXPECT_EQ(p.stop().code, 0);
  EXPECT_FALSE(file_exists(pid_path()));
}

}  // namespace
}  // namespace tlsfront::itest
