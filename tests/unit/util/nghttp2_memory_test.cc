#include "util/nghttp2_memory.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <string>

namespace tlsfront {
namespace {

nghttp2_session_callbacks* no_callbacks() {
  static nghttp2_session_callbacks* cbs = [] {
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    return c;
  }();
  return cbs;
}

// nghttp2 allocates its 16 KiB outbound frame buffer when the session is
// created; it must come from a mapping of its own, and go with the session.
TEST(Nghttp2Memory, TheFrameBufferOfASessionIsAMappingOfItsOwn) {
  Nghttp2Memory memory;
  nghttp2_session* session = nullptr;
  ASSERT_EQ(nghttp2_session_server_new3(&session, no_callbacks(), nullptr, nullptr, memory.mem()), 0);
  EXPECT_EQ(memory.mappings(), 1u);

  // The session still works: a SETTINGS frame and a PING are serialized.
  ASSERT_EQ(nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
  ASSERT_EQ(nghttp2_submit_ping(session, NGHTTP2_FLAG_NONE, nullptr), 0);
  std::string out;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    ASSERT_GE(n, 0);
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  EXPECT_EQ(out.size(), 9u + 9u + 8u);  // SETTINGS (empty) + PING (8 bytes)
  nghttp2_session_del(session);
  EXPECT_EQ(memory.mappings(), 0u);
}

TEST(Nghttp2Memory, SmallBlocksStayOnTheHeapAndLargeOnesAreBounded) {
  Nghttp2Memory memory;
  nghttp2_mem* mem = memory.mem();
  void* small = mem->malloc(100, mem->mem_user_data);
  EXPECT_EQ(memory.mappings(), 0u);
  void* large[Nghttp2Memory::kMaxMappings + 1];
  for (auto& p : large) p = mem->calloc(1, Nghttp2Memory::kLargeBytes, mem->mem_user_data);
  EXPECT_EQ(memory.mappings(), Nghttp2Memory::kMaxMappings);  // the last from the heap
  for (auto* p : large) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(static_cast<unsigned char*>(p)[Nghttp2Memory::kLargeBytes - 1], 0);  // zeroed
  }
  // realloc of a mapped block keeps its bytes.
  std::memset(large[0], 'x', 64);
  void* grown = mem->realloc(large[0], 2 * Nghttp2Memory::kLargeBytes, mem->mem_user_data);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(grown)[63], 'x');
  EXPECT_EQ(memory.mappings(), Nghttp2Memory::kMaxMappings - 1);  // all taken: it moved to the heap
  mem->free(grown, mem->mem_user_data);
  for (size_t i = 1; i < std::size(large); ++i) mem->free(large[i], mem->mem_user_data);
  mem->free(small, mem->mem_user_data);
  mem->free(nullptr, mem->mem_user_data);
  EXPECT_EQ(memory.mappings(), 0u);
}

// discard() gives a mapping's pages back: none resident after it, and the
// mapping reads as zeros and takes writes again. (Counted before the reads:
// a read maps the kernel's zero page, which mincore counts.)
TEST(Nghttp2Memory, DiscardGivesTheTouchedPagesBack) {
  Nghttp2Memory memory;
  nghttp2_mem* mem = memory.mem();
  auto* p = static_cast<unsigned char*>(mem->malloc(Nghttp2Memory::kLargeBytes, mem->mem_user_data));
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(memory.mappings(), 1u);
  EXPECT_EQ(memory.resident_pages(), 0u);  // nothing touched yet
  std::memset(p, 'x', 100);
  p[Nghttp2Memory::kLargeBytes - 1] = 'y';
  EXPECT_EQ(memory.resident_pages(), 2u);
  memory.discard();
  EXPECT_EQ(memory.resident_pages(), 0u);
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[Nghttp2Memory::kLargeBytes - 1], 0);
  p[0] = 'z';
  EXPECT_EQ(p[0], 'z');
  mem->free(p, mem->mem_user_data);
  EXPECT_EQ(memory.mappings(), 0u);
}

}  // namespace
}  // namespace tlsfront
