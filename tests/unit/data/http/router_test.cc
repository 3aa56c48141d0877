#include "data/http/router.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

TEST(Router, FirstMatchInFileOrder) {
  config::Config cfg;
  cfg.upstreams.resize(3);
  cfg.upstreams[0].name = "api";
  cfg.upstreams[1].name = "static";
  cfg.upstreams[2].name = "default";
  cfg.routes = {{"api.example.com", "/v1/", "api"}, {"", "/static/", "static"}, {"", "/", "default"}};
  Router r(cfg);
  EXPECT_EQ(r.match("api.example.com", "/v1/users"), 0u);
  EXPECT_EQ(r.match("other.example.com", "/v1/users"), 2u);
  EXPECT_EQ(r.match("api.example.com", "/static/x.css"), 1u);
  EXPECT_EQ(r.match("", "/"), 2u);
}

TEST(Router, NoMatchIsNullopt) {
  config::Config cfg;
  cfg.upstreams.resize(1);
  cfg.upstreams[0].name = "api";
  cfg.routes = {{"", "/api/", "api"}};
  Router r(cfg);
  EXPECT_FALSE(r.match("h", "/other").has_value());
  EXPECT_FALSE(r.match("h", "*").has_value());
}

}  // namespace
}  // namespace tlsfront::http
