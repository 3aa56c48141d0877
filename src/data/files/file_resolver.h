// FileResolver: which file of a route's directory answers a request path
// (nginx root/alias, index, try_files; gzip_static), opened safely:
//   - the path is the normalized one (message/request_path.h: no "..",
//     no encoded "/" or NUL), percent-decoded here;
//   - a segment starting with "." is not found unless dotfiles = true;
//   - every open is open_beneath's (files/open_beneath.h): beneath the
//     directory, a symbolic link in the path refused (403) unless
//     follow_symlinks = true (then links are followed, even out of the
//     directory); anything but a regular file or a directory is refused
//     (403), a directory is answered by its index file (listing is never
//     made);
//   - through the worker's open-file cache when given one
//     (files/open_file_cache.h): a path it holds is not opened again.
// The opens and fstats run on the worker's loop, as nginx's do (a
// dentry-cache hit, microseconds); the reads do not (files/file_reader.h).
// Errors: open_beneath's; a Missing path is the next try_files entry,
// else 404. `error` names the cause.
// Thread affinity: any (no shared state).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "config/config.h"
#include "data/files/open_beneath.h"

namespace tlsfront::files {

class OpenFileCache;

struct Resolution {
  // File: `file` is open; Status: answer `status`; Redirect: 301 to
  // `location` (a directory asked for without its "/"); Route: forward to
  // Config::routes[route] (try_files "@name"); Rematch: try_files' last
  // entry is a path, `location` (percent-encoded): route it again, as
  // nginx's internal redirect does (data/http/admission.h).
  enum class Kind { File, Status, Redirect, Route, Rematch };
  Kind kind = Kind::Status;
  int status = 404;
  std::string location;
  size_t route = 0;
  std::shared_ptr<const OpenFile> file;  // File: a regular file, open
  bool cache_hit = false;                // File: from the open-file cache
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
// `cache`: the worker's open-file cache, its limits and clock (uv_now,
// milliseconds); null: every path is opened.
struct CacheUse {
  OpenFileCache* cache;
  const config::OpenFileCache* limits;
  uint64_t now_ms;
  uint64_t pass = 0;  // the loop iteration (OpenFileCache::open)
};
// `rematched`: `path` is try_files' fallback routed again: a fallback
// path is then 404, never a second Rematch (one internal redirect).
Resolution resolve(const config::Route& route, std::string_view path, std::string_view query,
                   std::string_view accept_encoding, const CacheUse* cache = nullptr, bool rematched = false);

// `path` (decoded) with every octet but RFC 3986's pchar and "/" (and
// with "%") percent-encoded: a request-target path again.
std::string percent_encode_path(std::string_view path);

// `path` percent-decoded; false when it holds "%00" or a bad escape (the
// normalizer has refused those already).
bool percent_decode(std::string_view path, std::string& out);

}  // namespace tlsfront::files
