#include "data/files/open_file_cache.h"

#include <sys/uio.h>

namespace tlsfront::files {
namespace {

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

// The whole of `f` read from the page cache, never waiting for the disk.
bool read_from_page_cache(OpenFile& f) {
  const size_t size = static_cast<size_t>(f.st.st_size);
  std::string buf;
  buf.resize(size);
  size_t got = 0;
  while (got < size) {
    iovec iov{buf.data() + got, size - got};
    const ssize_t n = preadv2(f.fd.get(), &iov, 1, static_cast<off_t>(got), RWF_NOWAIT);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  f.content = std::move(buf);
  f.in_memory = true;
  return true;
}

}  // namespace

OpenFileCache& OpenFileCache::local() {
  static thread_local OpenFileCache cache;
  return cache;
}

bool OpenFileCache::unchanged(const Entry& e) {
  if (e.outcome != Outcome::Found || e.file->is_dir()) return true;
  struct stat now {};
  return fstat(e.file->fd.get(), &now) == 0 && now.st_nlink > 0 && same_file(now, e.file->st);
}

Opened OpenFileCache::open(const config::OpenFileCache& limits, uint64_t now_ms, LazyDir& dir,
                           const std::string& rel, bool follow, uint64_t pass) {
  if (limits.max == 0) {
    if (!lru_.empty()) clear();  // turned off by a reload
    return open_beneath(dir, rel, follow);
  }
  key_.assign(dir.path()).push_back('\0');
  key_.push_back(follow ? '1' : '0');
  key_.append(rel);
  auto found = index_.find(key_);
  if (found != index_.end()) {
    List::iterator it = found->second;
    if (now_ms - it->opened_ms < static_cast<uint64_t>(limits.valid.count()) &&
        ((pass != 0 && it->checked_pass == pass) || unchanged(*it))) {
      it->checked_pass = pass;
      lru_.splice(lru_.begin(), lru_, it);
      Opened hit;
      hit.outcome = it->outcome;
      hit.file = it->file;
      hit.cache_hit = true;
      return hit;
    }
    // Stale: opened again; the same file keeps its entry's content.
    Opened again = open_beneath(dir, rel, follow);
    if (again.outcome == Outcome::Found && it->outcome == Outcome::Found && !again.file->is_dir() &&
        !it->file->is_dir() && it->file->in_memory && same_file(again.file->st, it->file->st)) {
      it->opened_ms = now_ms;
      it->checked_pass = pass;
      lru_.splice(lru_.begin(), lru_, it);
      again.file = it->file;  // the new descriptor closes here
      return again;
    }
    erase(it);
    if (again.outcome != Outcome::Refused) insert(limits, now_ms, key_, again, pass);
    return again;
  }
  Opened o = open_beneath(dir, rel, follow);
  if (o.outcome != Outcome::Refused) insert(limits, now_ms, key_, o, pass);
  return o;
}

void OpenFileCache::insert(const config::OpenFileCache& limits, uint64_t now_ms, std::string_view key, Opened& o,
                           uint64_t pass) {
  if (o.outcome == Outcome::Found && !o.file->is_dir()) {
    const uint64_t size = static_cast<uint64_t>(o.file->st.st_size);
    if (size > 0 && size <= limits.content_max && size <= limits.memory) {
      while (memory_ + size > limits.memory && !lru_.empty()) erase(std::prev(lru_.end()));
      if (read_from_page_cache(*o.file)) memory_ += size;
    }
  }
  lru_.push_front(Entry{std::string(key), o.outcome, o.file, now_ms, pass});
  index_.emplace(lru_.front().key, lru_.begin());
  trim(limits);
}

void OpenFileCache::trim(const config::OpenFileCache& limits) {
  while (lru_.size() > limits.max || memory_ > limits.memory) erase(std::prev(lru_.end()));
}

void OpenFileCache::erase(List::iterator it) {
  if (it->file && it->file->in_memory) memory_ -= it->file->content.size();
  index_.erase(it->key);
  lru_.erase(it);
}

void OpenFileCache::clear() {
  index_.clear();
  lru_.clear();
  memory_ = 0;
}

}  // namespace tlsfront::files
