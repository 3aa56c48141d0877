#include "util/nghttp2_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tlsfront {
namespace {

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

Nghttp2Memory* self(void* user_data) { return static_cast<Nghttp2Memory*>(user_data); }

// The heap side: the process's malloc (mimalloc in the tlsfront binary,
// docs/ARCHITECTURE.md "Memory allocator").
void* heap_allocate(size_t size, bool zeroed) { return zeroed ? std::calloc(1, size) : std::malloc(size); }
void heap_release(void* p) { std::free(p); }
void* heap_reallocate(void* p, size_t size) { return std::realloc(p, size); }

}  // namespace

Nghttp2Memory::Nghttp2Memory() {
  mem_.mem_user_data = this;
  mem_.malloc = [](size_t size, void* u) { return self(u)->allocate(size, false); };
  mem_.free = [](void* p, void* u) { self(u)->release(p); };
  mem_.calloc = [](size_t n, size_t size, void* u) -> void* {
    if (size != 0 && n > SIZE_MAX / size) return nullptr;
    return self(u)->allocate(n * size, true);
  };
  mem_.realloc = [](void* p, size_t size, void* u) { return self(u)->reallocate(p, size); };
}

Nghttp2Memory::~Nghttp2Memory() {
  for (size_t i = 0; i < count_; ++i) munmap(mappings_[i].address, mappings_[i].length);
}

void* Nghttp2Memory::allocate(size_t size, bool zeroed) {
  if (size >= kLargeBytes && count_ < kMaxMappings) {
    const size_t length = (size + page_size() - 1) / page_size() * page_size();
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      mappings_[count_++] = {p, length};
      return p;  // zero-filled by the kernel, page by page as it is touched
    }
  }
  return heap_allocate(size, zeroed);
}

void Nghttp2Memory::discard() {
  for (size_t i = 0; i < count_; ++i) madvise(mappings_[i].address, mappings_[i].length, MADV_DONTNEED);
}

size_t Nghttp2Memory::resident_pages() const {
  size_t pages = 0;
  for (size_t i = 0; i < count_; ++i) {
    std::vector<unsigned char> in((mappings_[i].length + page_size() - 1) / page_size());
    if (mincore(mappings_[i].address, mappings_[i].length, in.data()) != 0) continue;
    for (unsigned char c : in) pages += c & 1;
  }
  return pages;
}

Nghttp2Memory::Mapping* Nghttp2Memory::find(void* p) {
  for (size_t i = 0; i < count_; ++i) {
    if (mappings_[i].address == p) return &mappings_[i];
  }
  return nullptr;
}

void Nghttp2Memory::release(void* p) {
  if (p == nullptr) return;
  Mapping* m = count_ > 0 ? find(p) : nullptr;
  if (m == nullptr) {
    heap_release(p);
    return;
  }
  munmap(m->address, m->length);
  *m = mappings_[--count_];
}

void* Nghttp2Memory::reallocate(void* p, size_t size) {
  if (p == nullptr) return allocate(size, false);  // how nghttp2_buf_init2 allocates the frame buffer
  Mapping* m = count_ > 0 ? find(p) : nullptr;
  if (m == nullptr) return heap_reallocate(p, size);
  void* moved = allocate(size, false);
  if (moved == nullptr) return nullptr;  // p stays valid, as realloc's contract says
  std::memcpy(moved, p, std::min(size, m->length));
  release(p);
  return moved;
}

}  // namespace tlsfront
