// TOML -> Config for [tls] early_data, max_early_data, early_data_methods.
#include <gtest/gtest.h>

#include <string>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

// kMinimal with `lines` added to its [tls] table (after line 6).
std::string with_tls(std::string_view lines) {
  std::string t(kMinimal);
  const std::string key = "key = \"/pki/key.pem\"\n";
  t.insert(t.find(key) + key.size(), lines);
  return t;
}

TEST(LoaderEarlyData, DefaultsOffWithSafeMethods) {
  Config c = load_ok(kMinimal);
  EXPECT_FALSE(c.tls.early_data);
  EXPECT_EQ(c.tls.max_early_data, 16u * 1024);
  EXPECT_EQ(c.tls.early_data_methods, (std::vector<std::string>{"GET", "HEAD", "OPTIONS"}));
}

TEST(LoaderEarlyData, OnWithSizeAndMethods) {
  Config c = load_ok(with_tls("early_data = true\nmax_early_data = \"64k\"\nearly_data_methods = [\"GET\", \"PURGE\"]\n"));
  EXPECT_TRUE(c.tls.early_data);
  EXPECT_EQ(c.tls.max_early_data, 64u * 1024);
  EXPECT_EQ(c.tls.early_data_methods, (std::vector<std::string>{"GET", "PURGE"}));
}

TEST(LoaderEarlyData, RefusesMethodsThatActTwiceAndBadValues) {
  EXPECT_EQ(load_error(with_tls("early_data_methods = [\"GET\", \"POST\"]\n")),
            "t.toml:7:30: tls.early_data_methods[1]: \"POST\" is not idempotent: a replayed early-data request would "
            "act twice");
  EXPECT_EQ(load_error(with_tls("early_data_methods = [\"GET\", \"GET\"]\n")),
            "t.toml:7:30: tls.early_data_methods[1]: duplicate method \"GET\"");
  EXPECT_EQ(load_error(with_tls("early_data_methods = [\"G T\"]\n")),
            "t.toml:7:23: tls.early_data_methods[0]: not a method token: \"G T\"");
  EXPECT_NE(load_error(with_tls("max_early_data = \"2m\"\n")).find("tls.max_early_data"), std::string::npos);
  EXPECT_NE(load_error(with_tls("early_data = \"yes\"\n")).find("tls.early_data"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::config
