// open_beneath: one path opened beneath a route's directory, safely, and
// what a response needs of it (OpenFile). The resolver (file_resolver.h)
// calls it directly or through the worker's OpenFileCache
// (open_file_cache.h).
//   - openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//     RESOLVE_NO_MAGICLINKS unless follow_symlinks (then a plain openat);
//     where openat2 is missing (ENOSYS: a kernel before 5.6, or valgrind
//     before 3.21) the path is walked one segment at a time, each opened
//     O_PATH | O_NOFOLLOW and refused if it is a symbolic link: the same
//     guarantee for the normalized paths the resolver passes (no "..");
//   - O_RDONLY | O_NONBLOCK (a FIFO does not block the open), then fstat:
//     anything but a regular file or a directory is refused (403).
// Errors: ENOENT, ENOTDIR, ENAMETOOLONG: Missing (404); ELOOP, EXDEV
// (a symbolic link), EACCES, EPERM, a device or FIFO: 403; EMFILE,
// ENFILE: 503; anything else: 500. `error` names the cause.
// Thread affinity: any (no shared state but a flag set once).
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include "util/unique_fd.h"

namespace tlsfront::files {

// An open file descriptor, closed on destruction.
using Fd = UniqueFd;

// A file (or directory) as opened: immutable once made, shared by the
// cache entry and the responses reading it (the descriptor closes when the
// last of them lets go).
struct OpenFile {
  Fd fd;  // a regular file's; a directory's is closed at once
  struct stat st {};
  // The response head's validators, made once per open: the strong ETag of
  // the file itself (file_rules.h strong_etag, no coding) and Last-Modified.
  std::string etag;
  std::string last_modified;
  // The whole file, when the cache holds it in memory (in_memory).
  std::string content;
  bool in_memory = false;

  bool is_dir() const { return S_ISDIR(st.st_mode); }
};

enum class Outcome { Found, Missing, Refused };

struct Opened {
  Outcome outcome = Outcome::Missing;
  int status = 404;   // Missing: 404; Refused: 403, 500 or 503
  std::string error;  // why, when Refused
  std::shared_ptr<OpenFile> file;  // Found
  bool cache_hit = false;          // answered by the OpenFileCache
};

// The route's directory, opened (O_PATH) on first use only: a request the
// cache answers never opens it.
class LazyDir {
 public:
  explicit LazyDir(const std::string& path) : path_(path) {}
  // The descriptor, or -1 with `error` (errno) set.
  int get();
  const std::string& path() const { return path_; }
  int error() const { return error_; }

 private:
  const std::string& path_;
  Fd fd_;
  int error_ = 0;
  bool tried_ = false;
};

// `rel`: relative (no leading "/", no ".." segment), "" for the directory
// itself. `follow`: follow_symlinks.
Opened open_beneath(LazyDir& dir, const std::string& rel, bool follow);

// openat2's RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS by hand, where openat2 is
// missing: every segment of `rel` (no ".." in it) opened O_PATH |
// O_NOFOLLOW beneath the last, a symbolic link refused (-1, errno ELOOP),
// the last reopened O_RDONLY | O_NONBLOCK. A descriptor, or -1 with errno.
// Exposed for tests.
int open_walking(int dir, const std::string& rel);

}  // namespace tlsfront::files
