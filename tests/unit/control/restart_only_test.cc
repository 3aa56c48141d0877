// keep_restart_only_settings(): what a reload names as restart-only and puts
// back to the running value.
#include "control/restart_only.h"

#include <gtest/gtest.h>

namespace tlsfront::control {
namespace {

config::Config running() {
  config::Config c;
  c.workers = 2;
  config::Listener a;
  a.address = config::Endpoint{"127.0.0.1", 8443};
  a.backlog = 511;
  config::Listener b = a;
  b.address.port = 8444;
  c.listeners = {a, b};
  c.log.access_log = "/var/log/tlsfront/access.log";
  c.tls.ticket_keys.files_origin = "tlsfront.toml:10:1";
  c.tls.ticket_keys.redis_origin = "tlsfront.toml:11:1";
  return c;
}

TEST(RestartOnly, NothingChangedKeepsEverythingAndNamesNothing) {
  const config::Config now = running();
  config::Config next = running();
  next.log.level = "debug";  // a reload may change this
  next.tls.ticket_keys.files_origin = "/etc/tlsfront/tlsfront.toml:10:1";  // a position, not a setting
  next.tls.ticket_keys.redis_origin = "/etc/tlsfront/tlsfront.toml:11:1";
  EXPECT_TRUE(keep_restart_only_settings(now, next).empty());
  EXPECT_EQ(next.log.level, "debug");
  EXPECT_EQ(next.tls.ticket_keys, now.tls.ticket_keys);
}

TEST(RestartOnly, EachChangedSettingIsNamedAndGetsItsRunningValueBack) {
  const config::Config now = running();
  config::Config next = running();
  next.workers = 4;
  next.pid_file = "/run/elsewhere.pid";
  next.listeners[1].backlog = 4096;
  config::Listener added;
  added.address = config::Endpoint{"127.0.0.1", 9443};
  added.backlog = 100;  // a new listener's backlog is its own
  next.listeners.push_back(added);
  next.log.access_log = "/tmp/elsewhere.log";
  next.admin.enabled = !now.admin.enabled;
  next.tls.session_cache.timeout = now.tls.session_cache.timeout + std::chrono::milliseconds(1);
  next.tls.ticket_keys.redis_prefix = "other";
  next.shutdown_timeout = std::chrono::milliseconds(1);  // reloadable

  EXPECT_EQ(keep_restart_only_settings(now, next),
            (std::vector<std::string>{"workers", "pid_file", "backlog of 127.0.0.1:8444", "log.access_log", "[admin]",
                                      "[tls.session_cache]", "[tls.ticket_keys]"}));
  EXPECT_EQ(next.workers, now.workers);
  EXPECT_EQ(next.pid_file, now.pid_file);
  EXPECT_EQ(next.listeners[1].backlog, now.listeners[1].backlog);
  EXPECT_EQ(next.listeners[2].backlog, 100);
  EXPECT_EQ(next.log.access_log, now.log.access_log);
  EXPECT_EQ(next.admin, now.admin);
  EXPECT_EQ(next.tls.session_cache, now.tls.session_cache);
  EXPECT_EQ(next.tls.ticket_keys, now.tls.ticket_keys);
  EXPECT_EQ(next.shutdown_timeout, std::chrono::milliseconds(1));
}

}  // namespace
}  // namespace tlsfront::control
