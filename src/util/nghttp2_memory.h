// Nghttp2Memory: the nghttp2_mem allocator of one nghttp2 session, which puts
// the session's large buffers in pages of their own.
//
// Why: nghttp2 allocates its outbound frame buffer (16,394 bytes: a 9-byte
// frame header, a padding byte and a 16 KiB payload) when a session is
// created and keeps it until the session is deleted. From glibc's heap that
// memory is resident from the start, since the heap hands out the pages the
// TLS handshake just freed, though a frame of an API response (HEADERS and a
// small DATA) only ever writes its first page. Each allocation of at least
// kLargeBytes gets an anonymous mapping of its own instead, so an idle
// session holds in RSS only the pages its frames touched (measured: about
// 11 KiB less per idle HTTP/2 connection; docs/ARCHITECTURE.md, "Idle
// connections").
// discard() gives a mapping's touched pages back while the session is idle
// (nothing being sent or received): the next frame touches them again, as
// zero-filled pages (Http2Session calls it once it has had no stream for a
// while: kFrameBufferRelease).
//
// Every other block comes from the process's malloc.
//
// Bounds: at most kMaxMappings mappings per session; beyond that, or when
// mmap fails (vm.max_map_count), the heap serves the request as before.
// realloc(nullptr, n) is an allocation (nghttp2 allocates its buffers so).
// realloc of a mapped block moves it (nghttp2 reallocates only its small
// buffers). Errors: an allocation that fails returns nullptr, which nghttp2
// reports as NGHTTP2_ERR_NOMEM.
//
// Thread affinity: the session's thread; not copyable or movable (nghttp2
// keeps mem()'s address). Declare it before the session that uses it, so the
// session is deleted first.
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>

namespace tlsfront {

class Nghttp2Memory {
 public:
  static constexpr size_t kLargeBytes = 16 * 1024;
  static constexpr size_t kMaxMappings = 8;

  Nghttp2Memory();
  ~Nghttp2Memory();
  Nghttp2Memory(const Nghttp2Memory&) = delete;
  Nghttp2Memory& operator=(const Nghttp2Memory&) = delete;

  // For nghttp2_session_{server,client}_new3.
  nghttp2_mem* mem() { return &mem_; }
  // Mappings held now (for tests).
  size_t mappings() const { return count_; }
  // Gives the pages of every mapping back to the kernel (madvise
  // MADV_DONTNEED): they read as zeros when touched next. Only while nghttp2
  // holds nothing in them: no frame being serialized or sent
  // (nghttp2_session_want_write() == 0) and no frame partly received.
  void discard();
  // Pages of the mappings resident now (mincore; for tests).
  size_t resident_pages() const;

 private:
  struct Mapping {
    void* address;
    size_t length;
  };

  void* allocate(size_t size, bool zeroed);
  void release(void* p);
  void* reallocate(void* p, size_t size);
  Mapping* find(void* p);

  nghttp2_mem mem_;
  std::array<Mapping, kMaxMappings> mappings_{};
  size_t count_ = 0;
};

}  // namespace tlsfront
