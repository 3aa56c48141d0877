// config::accepted_keys: the keys each table's unknown-key check accepts, as
// dotted paths without indices, for the tables the text holds (what the
// config_reference test compares with docs/configuration.md).
#include "config/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tlsfront::config {
namespace {

constexpr const char* kMinimal = R"(
[[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "a.pem"
key = "a.key"
[[upstream]]
name = "a"
servers = ["127.0.0.1:9000"]
[[route]]
upstream = "a"
)";

bool has(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

TEST(AcceptedKeys, NamesEveryKeyOfEachTablePresentWithoutIndices) {
  auto keys = accepted_keys(std::string(kMinimal) + "[[upstream]]\nname = \"b\"\nservers = [\"127.0.0.1:9001\"]\n"
                                                    "[upstream.tls]\nserver_name = \"b.internal\"\n",
                            "t.toml");
  ASSERT_TRUE(keys.ok()) << keys.error().detail;
  EXPECT_TRUE(has(*keys, "workers"));
  EXPECT_TRUE(has(*keys, "listen.address"));
  EXPECT_TRUE(has(*keys, "listen.tcp_fastopen"));
  EXPECT_TRUE(has(*keys, "tls.session_ticket_count"));
  EXPECT_TRUE(has(*keys, "tls.ocsp"));  // a key of [tls]; [tls.ocsp] itself is absent:
  EXPECT_FALSE(has(*keys, "tls.ocsp.stapling"));
  EXPECT_TRUE(has(*keys, "upstream.keepalive"));
  EXPECT_TRUE(has(*keys, "upstream.tls.verify"));  // upstream[1].tls, without the index
  EXPECT_TRUE(has(*keys, "route.compress_level"));
  // Tables the text does not hold are not read, so their keys are not named.
  EXPECT_FALSE(has(*keys, "admin.address"));
  EXPECT_FALSE(has(*keys, "route.return.status"));
  EXPECT_TRUE(std::is_sorted(keys->begin(), keys->end()));
  EXPECT_EQ(std::adjacent_find(keys->begin(), keys->end()), keys->end()) << "a key named twice";
}

TEST(AcceptedKeys, FailsAsTheLoaderDoes) {
  auto keys = accepted_keys(std::string(kMinimal) + "[admin]\nadress = \"127.0.0.1:9901\"\n", "t.toml");
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.error().detail.find("admin.adress: unknown key"), std::string::npos) << keys.error().detail;
}

}  // namespace
}  // namespace tlsfront::config
