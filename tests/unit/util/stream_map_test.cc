// StreamMap: ID order whatever the insertion order, replace on a known ID,
// find and erase, and no reallocation once its capacity is warm.
#include "util/stream_map.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace tlsfront {
namespace {

std::vector<int32_t> ids(const StreamMap<int>& m) {
  std::vector<int32_t> out;
  for (const auto& [id, v] : m) out.push_back(id);
  return out;
}

TEST(StreamMap, KeepsIdOrderAndFindsEveryStream) {
  StreamMap<int> m;
  for (int32_t id : {5, 1, 9, 3, 7}) m.insert(id, id * 10);  // out of order too
  EXPECT_EQ(ids(m), (std::vector<int32_t>{1, 3, 5, 7, 9}));
  for (int32_t id : {1, 3, 5, 7, 9}) {
    auto it = m.find(id);
    ASSERT_NE(it, m.end());
    EXPECT_EQ(it->second, id * 10);
  }
  EXPECT_EQ(m.find(0), m.end());
  EXPECT_EQ(m.find(4), m.end());
  EXPECT_EQ(m.find(11), m.end());
  m.insert(5, 55);  // replaces
  EXPECT_EQ(m.size(), 5u);
  EXPECT_EQ(m.find(5)->second, 55);
  m.erase(m.find(3));
  EXPECT_EQ(ids(m), (std::vector<int32_t>{1, 5, 7, 9}));
  EXPECT_EQ(m.find(3), m.end());
  const StreamMap<int>& c = m;
  EXPECT_NE(c.find(9), c.end());
}

TEST(StreamMap, OwnsMoveOnlyValuesAndReusesItsCapacity) {
  StreamMap<std::unique_ptr<int>> m;
  int32_t next = 1;
  for (; next < 20; next += 2) m.insert(next, std::make_unique<int>(next));
  while (m.size() > 1) m.erase(m.begin());
  const auto* storage = &*m.begin();
  m.erase(m.begin());
  for (int round = 0; round < 100; ++round, next += 2) {
    m.insert(next, std::make_unique<int>(next));
    ASSERT_EQ(*m.find(next)->second, next);
    EXPECT_EQ(&*m.begin(), storage);  // one stream at a time: never reallocated
    m.erase(m.find(next));
  }
}

}  // namespace
}  // namespace tlsfront
