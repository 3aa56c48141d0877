// FileResolver: which file of a route's directory answers a request path
// (nginx root/alias, index, try_files; gzip_static), opened safely:
//   - the path is the normalized one (message/request_path.h: no "..",
//     no encoded "/" or NUL), percent-decoded here;
//   - a segment starting with "." is not found unless dotfiles = true;
//   - every open is openat2(2) beneath the directory (RESOLVE_BENEATH), and
//     with RESOLVE_NO_SYMLINKS unless follow_symlinks = true (then links are
//     followed, even out of the directory): a symbolic link in the path is
//     refused (403), never followed out;
//   - opened O_RDONLY | O_NONBLOCK (a FIFO does not block the open), then
//     fstat: anything but a regular file or a directory is refused (403),
//     a directory is answered by its index file (listing is never made).
// The open and fstat run on the worker's loop, as nginx's do without
// open_file_cache (a dentry-cache hit, microseconds); the reads do not
// (files/file_reader.h).
// Errors: ENOENT, ENOTDIR, ENAMETOOLONG: not found (the next try_files
// entry, else 404); ELOOP, EXDEV, EACCES, EPERM, a device or FIFO: 403;
// EMFILE, ENFILE: 503; anything else: 500. `error` names the cause.
// Thread affinity: any (no shared state).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "config/config.h"
#include "util/unique_fd.h"

namespace tlsfront::files {

// An open file descriptor, closed on destruction.
using Fd = UniqueFd;

struct Resolution {
  // File: `file` is open; Status: answer `status`; Redirect: 301 to
  // `location` (a directory asked for without its "/"); Route: forward to
  // Config::routes[route] (try_files "@name").
  enum class Kind { File, Status, Redirect, Route };
  Kind kind = Kind::Status;
  int status = 404;
  std::string location;
  size_t route = 0;
  Fd file;
  struct stat st {};
  // The path of the file as served (for its Content-Type: the original's
  // when a precompressed variant is sent).
  std::string type_path;
  // The content coding of a precompressed variant ("br", "gzip"), "" for
  // the file itself.
  std::string_view coding;
  // Why a 403/404/5xx: "symbolic link refused", "not a regular file", ...
  std::string error;
};

// `path`: the normalized request path (percent-encoding still in it);
// `query`: "" or "?..." (kept on a redirect); `accept_encoding`: the
// request's Accept-Encoding values joined with ",".
Resolution resolve(const config::Route& route, std::string_view path, std::string_view query,
                   std::string_view accept_encoding);

// `path` percent-decoded; false when it holds "%00" or a bad escape (the
// normalizer has refused those already).
bool percent_decode(std::string_view path, std::string& out);

}  // namespace tlsfront::files
