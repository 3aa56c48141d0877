// The Content-Type of a file by its extension: the route's `types`
// overrides first, then a built-in table (nginx's mime.types for the
// formats of web assets; JavaScript is text/javascript, RFC 9239), else
// application/octet-stream. Text types carry "; charset=utf-8".
// Thread affinity: none (pure function).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlsfront::files {

// `path`'s extension (after its last "." in its last segment) compared
// case-insensitively.
std::string_view content_type_for(std::string_view path,
                                  const std::vector<std::pair<std::string, std::string>>& overrides);

// Whether a response of `type` is worth compressing on the fly
// (text/*, JSON, JavaScript, XML, SVG, wasm).
bool compressible_type(std::string_view type);

}  // namespace tlsfront::files
