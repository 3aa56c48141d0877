// Shared by the loader tests: a minimal valid config and helpers that load
// it with extra lines appended.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/loader.h"

namespace tlsfront::config {
namespace {

using namespace std::chrono_literals;

// Lines 1-13; tests append after line 13, which is inside [[route]].
constexpr std::string_view kMinimal = R"([[listen]]
address = "127.0.0.1:8443"

[tls]
certificate = "/pki/cert.pem"
key = "/pki/key.pem"

[[upstream]]
name = "demo"
servers = ["127.0.0.1:9080"]

[[route]]
upstream = "demo"
)";

std::string with(std::string_view extra) { return std::string(kMinimal) + std::string(extra); }

std::string load_error(std::string_view toml) {
  Result<Config> r = load_string(toml, "t.toml");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "(loaded)";
  EXPECT_EQ(r.error().code, Errc::Config);
  return r.error().detail;
}

Config load_ok(std::string_view toml, std::string_view source = "/etc/tlsfront/t.toml") {
  Result<Config> r = load_string(toml, source);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().detail);
  return r.ok() ? std::move(r).value() : Config{};
}

}  // namespace
}  // namespace tlsfront::config
