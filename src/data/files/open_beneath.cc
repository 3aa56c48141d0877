#include "data/files/open_beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "data/files/file_rules.h"

namespace tlsfront::files {
namespace {

constexpr int kOpenFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

std::atomic<bool> no_openat2{false};  // set once openat2 said ENOSYS

}  // namespace

int open_walking(int dir, const std::string& rel) {
  Fd here;
  int at = dir;
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    const bool last = slash == std::string::npos;
    const std::string seg = rel.substr(start, last ? std::string::npos : slash - start);
    if (seg.empty() && !last) {  // "a//b": the same directory
      start = slash + 1;
      continue;
    }
    const char* name = seg.empty() ? "." : seg.c_str();
    const int fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    Fd opened(fd);
    struct stat st {};
    if (fstat(fd, &st) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
      errno = ELOOP;
      return -1;
    }
    if (last) {
      // Reopened for reading through its O_PATH descriptor: no lookup again.
      const std::string self = "/proc/self/fd/" + std::to_string(fd);
      const int rd = open(self.c_str(), kOpenFlags);
      return rd;
    }
    if (!S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      return -1;
    }
    here = std::move(opened);
    at = here.get();
    start = slash + 1;
  }
}

namespace {

long open_at(int dir, const std::string& rel, bool follow) {
  const char* name = rel.empty() ? "." : rel.c_str();
  if (follow) return openat(dir, name, kOpenFlags);
  if (!no_openat2.load(std::memory_order_relaxed)) {
    struct open_how how {};
    how.flags = kOpenFlags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = syscall(SYS_openat2, dir, name, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS) return fd;
    no_openat2.store(true, std::memory_order_relaxed);
  }
  return open_walking(dir, rel);
}

}  // namespace

int LazyDir::get() {
  if (!tried_) {
    tried_ = true;
    fd_ = Fd(::open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd_.valid()) error_ = errno;
  }
  return fd_.valid() ? fd_.get() : -1;
}

Opened open_beneath(LazyDir& dir, const std::string& rel, bool follow) {
  Opened o;
  const int at = dir.get();
  if (at < 0) {
    o.outcome = Outcome::Refused;
    o.status = dir.error() == ENOENT ? 404 : 403;
    o.error = "root: " + std::string(std::strerror(dir.error()));
    return o;
  }
  const long fd = open_at(at, rel, follow);
  if (fd < 0) {
    const int e = errno;
    switch (e) {
      case ENOENT:
      case ENOTDIR:
      case ENAMETOOLONG:
        o.outcome = Outcome::Missing;
        o.status = 404;
        return o;
      case ELOOP:
      case EXDEV:
        o.outcome = Outcome::Refused;
        o.status = 403;
        o.error = "symbolic link refused (follow_symlinks = false)";
        return o;
      case EACCES:
      case EPERM:
        o.status = 403;
        break;
      case EMFILE:
      case ENFILE:
        o.status = 503;
        break;
      default:
        o.status = 500;
    }
    o.outcome = Outcome::Refused;
    o.error = std::strerror(e);
    return o;
  }
  auto f = std::make_shared<OpenFile>();
  f->fd = Fd(static_cast<int>(fd));
  if (fstat(f->fd.get(), &f->st) != 0) {
    o.outcome = Outcome::Refused;
    o.status = 500;
    o.error = std::strerror(errno);
    return o;
  }
  if (!S_ISREG(f->st.st_mode) && !S_ISDIR(f->st.st_mode)) {
    o.outcome = Outcome::Refused;
    o.status = 403;
    o.error = "not a regular file";
    return o;
  }
  if (S_ISDIR(f->st.st_mode)) {
    f->fd = Fd();
  } else {
    f->etag = strong_etag(static_cast<int64_t>(f->st.st_mtim.tv_sec) * 1000000000 + f->st.st_mtim.tv_nsec,
                          static_cast<uint64_t>(f->st.st_size));
    f->last_modified = http_date(f->st.st_mtim.tv_sec);
  }
  o.outcome = Outcome::Found;
  o.file = std::move(f);
  return o;
}

}  // namespace tlsfront::files
