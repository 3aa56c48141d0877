// FieldBlock: the nghttp2_nv array points at the caller's names and at
// values copied (add) or not (add_view), stays right after its storage grew,
// is emptied by start(), counts octets as name + value + 4, and a name with
// uppercase goes out lowercased (nghttp2 lowercases its copy).
#include "util/nghttp2_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace tlsfront {
namespace {

std::string name_of(const nghttp2_nv& nv) { return std::string(reinterpret_cast<const char*>(nv.name), nv.namelen); }
std::string value_of(const nghttp2_nv& nv) {
  return std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen);
}

TEST(FieldBlock, PointsAtNamesAndCopiesValues) {
  FieldBlock& b = FieldBlock::start();
  const std::string type = "Content-Type";
  std::string value = "Application/JSON";
  b.add(":status", "200");
  b.add(type, value);
  b.add("Set-Cookie", "a=B", true);
  value.assign("changed after add");  // add() copied it
  ASSERT_EQ(b.size(), 3u);
  nghttp2_nv* nva = b.nva();
  EXPECT_EQ(name_of(nva[0]), ":status");
  EXPECT_EQ(value_of(nva[0]), "200");
  EXPECT_EQ(nva[1].name, reinterpret_cast<const uint8_t*>(type.data()));
  EXPECT_EQ(value_of(nva[1]), "Application/JSON");
  EXPECT_EQ(nva[1].flags, NGHTTP2_NV_FLAG_NONE);
  EXPECT_EQ(name_of(nva[2]), "Set-Cookie");
  EXPECT_EQ(value_of(nva[2]), "a=B");
  EXPECT_EQ(nva[2].flags, NGHTTP2_NV_FLAG_NO_INDEX);
  EXPECT_EQ(b.octets(), (7u + 3 + 4) + (12u + 16 + 4) + (10u + 3 + 4));
}

TEST(FieldBlock, PointersRightAfterTheStorageGrew) {
  std::vector<std::string> names;
  for (int i = 0; i < 500; ++i) names.push_back("x-field-" + std::to_string(i));
  FieldBlock& b = FieldBlock::start();
  for (int i = 0; i < 500; ++i) b.add(names[i], std::string(static_cast<size_t>(i), 'v'));
  nghttp2_nv* nva = b.nva();
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(name_of(nva[i]), names[i]);
    ASSERT_EQ(value_of(nva[i]), std::string(static_cast<size_t>(i), 'v'));
  }
}

// What a peer decodes from a block submitted with mixed-case names.
TEST(FieldBlock, NamesGoOutLowercased) {
  nghttp2_session_callbacks* cbs = nullptr;
  ASSERT_EQ(nghttp2_session_callbacks_new(&cbs), 0);
  nghttp2_session* client = nullptr;
  ASSERT_EQ(nghttp2_session_client_new(&client, cbs, nullptr), 0);
  std::vector<std::string> got;
  nghttp2_session_callbacks_set_on_header_callback(
      cbs, [](nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t namelen, const uint8_t*, size_t,
              uint8_t, void* user) {
        static_cast<std::vector<std::string>*>(user)->emplace_back(reinterpret_cast<const char*>(name), namelen);
        return 0;
      });
  nghttp2_session* server = nullptr;
  ASSERT_EQ(nghttp2_session_server_new(&server, cbs, &got), 0);
  ASSERT_EQ(nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0), 0);  // RFC 9113 §3.4, after the preface
  FieldBlock& b = FieldBlock::start();
  b.add(":method", "GET");
  b.add(":scheme", "http");
  b.add(":path", "/");
  b.add("X-Mixed-Case", "Value");
  b.add_view("User-Agent", "t");
  ASSERT_GT(nghttp2_submit_request(client, nullptr, b.nva(), b.size(), nullptr, nullptr), 0);
  const uint8_t* data = nullptr;
  for (ssize_t n; (n = nghttp2_session_mem_send(client, &data)) > 0;) {
    ASSERT_EQ(nghttp2_session_mem_recv(server, data, static_cast<size_t>(n)), n);
  }
  EXPECT_EQ(got, (std::vector<std::string>{":method", ":scheme", ":path", "x-mixed-case", "user-agent"}));
  nghttp2_session_del(server);
  nghttp2_session_del(client);
  nghttp2_session_callbacks_del(cbs);
}

TEST(FieldBlock, ViewsPointAtTheCallersBytesBesideCopies) {
  const std::string name = "x-view", value = "kept";
  FieldBlock& b = FieldBlock::start();
  b.add(":method", "GET");
  b.add_view(name, value, true);
  for (int i = 0; i < 100; ++i) b.add("x-grow", std::string(64, 'g'));  // moves the copies' storage
  nghttp2_nv* nva = b.nva();
  EXPECT_EQ(name_of(nva[0]), ":method");
  EXPECT_EQ(value_of(nva[0]), "GET");
  EXPECT_EQ(nva[1].name, reinterpret_cast<const uint8_t*>(name.data()));
  EXPECT_EQ(nva[1].value, reinterpret_cast<const uint8_t*>(value.data()));
  EXPECT_EQ(nva[1].flags, NGHTTP2_NV_FLAG_NO_INDEX);
  EXPECT_EQ(name_of(nva[101]), "x-grow");
  EXPECT_EQ(b.octets(), (7u + 3 + 4) + (6u + 4 + 4) + 100 * (6u + 64 + 4));
}

TEST(FieldBlock, HeldFieldsAreNotCopiedByNghttp2) {
  FieldBlock& b = FieldBlock::start();
  b.add_view(":scheme", "http", false, true);
  b.add_view(":path", "/x", true, true);
  b.add_view("accept", "*/*");
  nghttp2_nv* nva = b.nva();
  EXPECT_EQ(nva[0].flags, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
  EXPECT_EQ(nva[1].flags, NGHTTP2_NV_FLAG_NO_INDEX | NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
  EXPECT_EQ(nva[2].flags, NGHTTP2_NV_FLAG_NONE);
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
