// RequestId: generated IDs are 32 lowercase hex characters and never repeat,
// across the refills of the thread's random batch (util/random_batch.h:
// 512 octets, 32 IDs a draw); adopted
// IDs are 1..128 VCHARs.
#include "data/http/request_id.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

namespace tlsfront::http {
namespace {

bool is_hex_id(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(RequestId, GeneratedIdsAreHexAndDistinctAcrossPoolRefills) {
  std::set<std::string> seen;
  RequestId id;
  for (int i = 0; i < 1000; ++i) {  // ~32 draws from the DRBG
    id.generate();
    ASSERT_TRUE(is_hex_id(id.view())) << id.view();
    ASSERT_TRUE(seen.insert(std::string(id.view())).second) << "repeated at " << i << ": " << id.view();
  }
}

TEST(RequestId, ThreadsDrawTheirOwnIds) {
  std::set<std::string> a, b;
  auto run = [](std::set<std::string>& out) {
    RequestId id;
    for (int i = 0; i < 200; ++i) {
      id.generate();
      out.insert(std::string(id.view()));
    }
  };
  std::thread t1(run, std::ref(a)), t2(run, std::ref(b));
  t1.join();
  t2.join();
  ASSERT_EQ(a.size(), 200u);
  ASSERT_EQ(b.size(), 200u);
  for (const auto& x : a) EXPECT_EQ(b.count(x), 0u) << x;
}

TEST(RequestId, AdoptsOnlyVisibleAsciiUpTo128) {
  RequestId id;
  id.generate();
  const std::string before(id.view());
  EXPECT_FALSE(id.adopt(""));
  EXPECT_FALSE(id.adopt("has space"));
  EXPECT_FALSE(id.adopt(std::string(129, 'a')));
  EXPECT_EQ(id.view(), before);
  EXPECT_TRUE(id.adopt(std::string(128, 'a')));
  EXPECT_EQ(id.view(), std::string(128, 'a'));
  EXPECT_TRUE(id.adopt("client-7"));
  EXPECT_EQ(id.view(), "client-7");
}

}  // namespace
}  // namespace tlsfront::http
