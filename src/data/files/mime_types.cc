#include "data/files/mime_types.h"

#include <algorithm>
#include <array>

namespace tlsfront::files {
namespace {

struct Entry {
  std::string_view ext;
  std::string_view type;
};

// Sorted by extension (binary search).
constexpr std::array kTable{
    Entry{"7z", "application/x-7z-compressed"},
    Entry{"avif", "image/avif"},
    Entry{"bin", "application/octet-stream"},
    Entry{"bmp", "image/bmp"},
    Entry{"css", "text/css; charset=utf-8"},
    Entry{"csv", "text/csv; charset=utf-8"},
    Entry{"eot", "application/vnd.ms-fontobject"},
    Entry{"gif", "image/gif"},
    Entry{"gz", "application/gzip"},
    Entry{"htm", "text/html; charset=utf-8"},
    Entry{"html", "text/html; charset=utf-8"},
    Entry{"ico", "image/x-icon"},
    Entry{"jpeg", "image/jpeg"},
    Entry{"jpg", "image/jpeg"},
    Entry{"js", "text/javascript; charset=utf-8"},
    Entry{"json", "application/json"},
    Entry{"jsonld", "application/ld+json"},
    Entry{"map", "application/json"},
    Entry{"md", "text/markdown; charset=utf-8"},
    Entry{"mjs", "text/javascript; charset=utf-8"},
    Entry{"mp3", "audio/mpeg"},
    Entry{"mp4", "video/mp4"},
    Entry{"oga", "audio/ogg"},
    Entry{"ogg", "audio/ogg"},
    Entry{"ogv", "video/ogg"},
    Entry{"otf", "font/otf"},
    Entry{"pdf", "application/pdf"},
    Entry{"png", "image/png"},
    Entry{"svg", "image/svg+xml"},
    Entry{"tar", "application/x-tar"},
    Entry{"ttf", "font/ttf"},
    Entry{"txt", "text/plain; charset=utf-8"},
    Entry{"wasm", "application/wasm"},
    Entry{"wav", "audio/wav"},
    Entry{"webm", "video/webm"},
    Entry{"webmanifest", "application/manifest+json"},
    Entry{"webp", "image/webp"},
    Entry{"woff", "font/woff"},
    Entry{"woff2", "font/woff2"},
    Entry{"xml", "application/xml"},
    Entry{"zip", "application/zip"},
};

constexpr bool sorted() {
  for (size_t i = 1; i < kTable.size(); ++i) {
    if (!(kTable[i - 1].ext < kTable[i].ext)) return false;
  }
  return true;
}
static_assert(sorted(), "kTable must be sorted by extension");

}  // namespace

std::string_view content_type_for(std::string_view path,
                                  const std::vector<std::pair<std::string, std::string>>& overrides) {
  constexpr std::string_view kDefault = "application/octet-stream";
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return kDefault;
  char buf[16];
  const std::string_view raw = path.substr(dot + 1);
  if (raw.empty() || raw.size() > sizeof buf) return kDefault;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  }
  const std::string_view ext(buf, raw.size());
  for (const auto& [e, type] : overrides) {
    if (e == ext) return type;
  }
  auto it = std::lower_bound(kTable.begin(), kTable.end(), ext, [](const Entry& a, std::string_view b) { return a.ext < b; });
  return it != kTable.end() && it->ext == ext ? it->type : kDefault;
}

bool compressible_type(std::string_view type) {
  return type.starts_with("text/") || type.starts_with("application/json") || type.starts_with("application/xml") ||
         type.starts_with("application/manifest+json") || type.starts_with("application/ld+json") ||
         type.starts_with("image/svg+xml") || type.starts_with("application/wasm");
}

}  // namespace tlsfront::files
