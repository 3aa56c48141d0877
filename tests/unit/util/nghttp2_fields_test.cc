// FieldBlock: the nghttp2_nv array points at lowercased names and unchanged
// values, stays right after its storage grew, is emptied by start(), and
// counts octets as name + value + 4.
#include "util/nghttp2_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace tlsfront {
namespace {

std::string name_of(const nghttp2_nv& nv) { return std::string(reinterpret_cast<const char*>(nv.name), nv.namelen); }
std::string value_of(const nghttp2_nv& nv) {
  return std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen);
}

TEST(FieldBlock, LowercasesNamesAndKeepsValues) {
  FieldBlock& b = FieldBlock::start();
  b.add(":status", "200");
  b.add("Content-Type", "Application/JSON");
  b.add("Set-Cookie", "a=B", true);
  ASSERT_EQ(b.size(), 3u);
  nghttp2_nv* nva = b.nva();
  EXPECT_EQ(name_of(nva[0]), ":status");
  EXPECT_EQ(value_of(nva[0]), "200");
  EXPECT_EQ(name_of(nva[1]), "content-type");
  EXPECT_EQ(value_of(nva[1]), "Application/JSON");
  EXPECT_EQ(nva[1].flags, NGHTTP2_NV_FLAG_NONE);
  EXPECT_EQ(name_of(nva[2]), "set-cookie");
  EXPECT_EQ(value_of(nva[2]), "a=B");
  EXPECT_EQ(nva[2].flags, NGHTTP2_NV_FLAG_NO_INDEX);
  EXPECT_EQ(b.octets(), (7u + 3 + 4) + (12u + 16 + 4) + (10u + 3 + 4));
}

TEST(FieldBlock, PointersRightAfterTheStorageGrew) {
  FieldBlock& b = FieldBlock::start();
  for (int i = 0; i < 500; ++i) b.add("X-Field-" + std::to_string(i), std::string(static_cast<size_t>(i), 'v'));
  nghttp2_nv* nva = b.nva();
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(name_of(nva[i]), "x-field-" + std::to_string(i));
    ASSERT_EQ(value_of(nva[i]), std::string(static_cast<size_t>(i), 'v'));
  }
}

TEST(FieldBlock, ViewsPointAtTheCallersBytesBesideCopies) {
  const std::string name = "x-view", value = "kept";
  FieldBlock& b = FieldBlock::start();
  b.add(":Method", "GET");
  b.add_view(name, value, true);
  for (int i = 0; i < 100; ++i) b.add("X-Grow", std::string(64, 'g'));  // moves the copies' storage
  nghttp2_nv* nva = b.nva();
  EXPECT_EQ(name_of(nva[0]), ":method");
  EXPECT_EQ(value_of(nva[0]), "GET");
  EXPECT_EQ(nva[1].name, reinterpret_cast<const uint8_t*>(name.data()));
  EXPECT_EQ(nva[1].value, reinterpret_cast<const uint8_t*>(value.data()));
  EXPECT_EQ(nva[1].flags, NGHTTP2_NV_FLAG_NO_INDEX);
  EXPECT_EQ(name_of(nva[101]), "x-grow");
  EXPECT_EQ(b.octets(), (7u + 3 + 4) + (6u + 4 + 4) + 100 * (6u + 64 + 4));
}

TEST(FieldBlock, StartEmptiesTheBlock) {
  FieldBlock::start().add("a", "1");
  FieldBlock& b = FieldBlock::start();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.octets(), 0u);
  b.add("b", "2");
  EXPECT_EQ(name_of(b.nva()[0]), "b");
}

TEST(FieldBlock, EachThreadHasItsOwn) {
  FieldBlock& mine = FieldBlock::start();
  mine.add("mine", "1");
  FieldBlock* theirs = nullptr;
  std::thread([&theirs] {
    theirs = &FieldBlock::start();
    theirs->add("theirs", "2");
  }).join();
  EXPECT_NE(theirs, &mine);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(name_of(mine.nva()[0]), "mine");
}

}  // namespace
}  // namespace tlsfront
