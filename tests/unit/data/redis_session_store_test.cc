// RedisSessionStore: the key format (the I/O is covered by
// tests/integration/redis_session_cache_test.cc against a real redis-server).
#include "data/redis_session_store.h"

#include <gtest/gtest.h>

#include "tls/session_cache.h"

namespace tlsfront::data {
namespace {

TEST(RedisSessionStore, KeyIsPrefixSessAndHexOfCacheKey) {
  EXPECT_EQ(RedisSessionStore::redis_key("tlsfront", std::string("\x02\xab\x00\xff", 4)), "tlsfront:sess:02ab00ff");
  const std::string cache_key = tls::SessionCache::make_key("ct", "id");
  EXPECT_EQ(RedisSessionStore::redis_key("edge", cache_key), "edge:sess:0263746964");
  EXPECT_EQ(RedisSessionStore::redis_key("p", ""), "p:sess:");
}

}  // namespace
}  // namespace tlsfront::data
