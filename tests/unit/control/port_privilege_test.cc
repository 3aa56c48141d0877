// privileged_port_warning: which configured ports a process without
// CAP_NET_BIND_SERVICE cannot bind, against the unprivileged-port sysctl.
#include "control/port_privilege.h"

#include <gtest/gtest.h>

namespace tlsfront::control {
namespace {

config::Config with_ports(std::initializer_list<uint16_t> listen, uint16_t admin) {
  config::Config c;
  for (uint16_t port : listen) {
    config::Listener l;
    l.address = {"0.0.0.0", port};
    c.listeners.push_back(l);
  }
  c.admin.address = {"127.0.0.1", admin};
  return c;
}

TEST(PortPrivilege, NamesEachPortBelowTheStart) {
  const PortPrivilege unprivileged{1024, false};
  auto w = privileged_port_warning(with_ports({443, 8443, 80}, 99), unprivileged);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->starts_with("listen 0.0.0.0:443, listen 0.0.0.0:80, admin 127.0.0.1:99: ports below 1024 need"))
      << *w;
  EXPECT_NE(w->find("CAP_NET_BIND_SERVICE"), std::string::npos) << *w;
}

TEST(PortPrivilege, NothingToSay) {
  // High ports, port 0 (any free one), a lowered sysctl, the capability.
  EXPECT_FALSE(privileged_port_warning(with_ports({8443, 0}, 9901), {1024, false}));
  EXPECT_FALSE(privileged_port_warning(with_ports({443}, 9901), {0, false}));
  EXPECT_FALSE(privileged_port_warning(with_ports({443}, 80), {1024, true}));
  config::Config no_admin = with_ports({8443}, 80);
  no_admin.admin.enabled = false;
  EXPECT_FALSE(privileged_port_warning(no_admin, {1024, false}));
}

}  // namespace
}  // namespace tlsfront::control
