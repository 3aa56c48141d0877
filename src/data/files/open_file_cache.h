// OpenFileCache: what a worker keeps of the paths its file routes open
// (nginx open_file_cache with open_file_cache_errors on; h2o's per-thread
// file cache), bounded by [open_file_cache] (config/files_config.h):
//   - key: the route's directory, follow_symlinks, and the path beneath it
//     (open_beneath's arguments); value: what open_beneath found — a file
//     (its open descriptor, fstat, ETag and Last-Modified made once, and
//     for a file of at most content_max octets its content, read once), a
//     directory, or "not there" (Missing). A refusal (403, 5xx) is never
//     kept;
//   - a hit on a file fstats its descriptor, once per loop iteration
//     (`pass`: the hits of one iteration, requests read together, share
//     the first one's check): a file deleted (no link left), replaced by
//     rename over it, or changed in size, mtime or inode is opened again
//     from the next iteration on; nothing else is checked until `valid`
//     has passed since the path was last opened: then it is opened again
//     (a symbolic link or permission change, a new file where there was
//     none, a directory renamed are seen within `valid`);
//   - at most `max` entries (each file's holds a descriptor; a response
//     still reading an evicted file holds it until it ends), at most
//     `memory` octets of content, least recently used evicted first;
//   - content is read at insertion with preadv2(RWF_NOWAIT) only: a file
//     not in the page cache is not held (its responses read it through
//     FileReader, off the loop) until a later open finds it there.
// Thread affinity: one per thread (local()), used by that thread only: a
// worker's loop thread.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "config/files_config.h"
#include "data/files/open_beneath.h"

namespace tlsfront::files {

class OpenFileCache {
 public:
  // The calling thread's cache (freed, descriptors closed, at thread exit).
  static OpenFileCache& local();

  // open_beneath(dir, rel, follow) through the cache. `now_ms`: a
  // monotonic clock in milliseconds (the loop's uv_now); `pass`: the loop
  // iteration (LoopContext::pass), a file's hits within one are checked
  // once; 0: every hit is checked.
  Opened open(const config::OpenFileCache& limits, uint64_t now_ms, LazyDir& dir, const std::string& rel,
              bool follow, uint64_t pass = 0);

  size_t size() const { return lru_.size(); }
  uint64_t memory() const { return memory_; }
  void clear();

 private:
  struct Entry {
    std::string key;
    Outcome outcome = Outcome::Missing;  // Found or Missing
    std::shared_ptr<OpenFile> file;      // Found
    uint64_t opened_ms = 0;              // when the path was last opened
    uint64_t checked_pass = 0;           // the loop iteration of the last fstat check (0: none)
  };
  using List = std::list<Entry>;

  // Whether `e`'s file, fstat'ed now, is still the one it opened.
  static bool unchanged(const Entry& e);
  // Keeps `o` (the open of `key` just made) as the newest entry, its
  // content read when it fits; evicts beyond the limits.
  void insert(const config::OpenFileCache& limits, uint64_t now_ms, std::string_view key, Opened& o, uint64_t pass);
  void erase(List::iterator it);
  void trim(const config::OpenFileCache& limits);

  List lru_;  // most recently used first
  std::unordered_map<std::string_view, List::iterator> index_;  // keys point into lru_'s entries
  uint64_t memory_ = 0;  // content octets held
  std::string key_;      // scratch
};

}  // namespace tlsfront::files
