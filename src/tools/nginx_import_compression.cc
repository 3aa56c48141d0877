// import-nginx: the default server's gzip settings → [compression]
// (tools/nginx_import_detail.h: import_compression).
#include <algorithm>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {
namespace {

// A media type as [compression] types takes it: "type/subtype" or "type/*".
bool media_type(const std::string& t) {
  size_t slash = t.find('/');
  auto token = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
      return std::isalnum(c) ||
             std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    });
  };
  return slash != std::string::npos && token(std::string_view(t).substr(0, slash)) && t.substr(0, slash) != "*" &&
         token(std::string_view(t).substr(slash + 1));
}

}  // namespace

void import_compression(const Server& def, Model& m, Ledger& l) {
  const Directive* gzip = effective_one(def.chain, "gzip");
  const Directive* types = effective_one(def.chain, "gzip_types");
  const Directive* min_length = effective_one(def.chain, "gzip_min_length");
  const Directive* level = effective_one(def.chain, "gzip_comp_level");
  if (gzip == nullptr || gzip->args != std::vector<std::string>{"on"}) {
    if (gzip) l.note(*gzip, "not needed: compression is off by default");
    for (const Directive* d : {types, min_length, level}) {
      if (d) l.note(*d, "not needed: gzip is off");
    }
    return;
  }
  l.carry(*gzip);
  m.compression.push_back({"encodings", R"(["gzip"])", origin(*gzip)});
  if (types) {
    // nginx always compresses text/html too.
    std::vector<std::string> list{"text/html"};
    for (const std::string& t : types->args) {
      if (t == "*") {
        l.note(*types, "* not carried over: tlsfront compresses the listed types only");
      } else if (!media_type(t)) {
        l.note(*types, t + " not carried over: not a type/subtype");
      } else if (std::find(list.begin(), list.end(), t) == list.end()) {
        list.push_back(t);
      }
    }
    std::string value = "[";
    for (size_t i = 0; i < list.size(); ++i) value += (i ? ", " : "") + toml_string(list[i]);
    m.compression.push_back({"types", value + "]", origin(*types)});
    l.carry(*types);
  } else {
    l.note(*gzip,
           "carried over; without gzip_types nginx compresses text/html only, tlsfront its default types "
           "(application/json, text/*, application/javascript, image/svg+xml)");
  }
  if (auto n = min_length && min_length->args.size() == 1 ? parse_size(min_length->args[0]) : std::nullopt; n) {
    m.compression.push_back({"min_bytes", toml_string(std::to_string(*n)), origin(*min_length)});
    l.carry(*min_length);
  } else if (min_length) {
    l.note(*min_length, "not carried over: invalid length");
  } else {
    l.note(*gzip,
           "carried over; without gzip_min_length nginx compresses answers from 20 bytes, tlsfront from its "
           "min_bytes, 1k (smaller ones gain little for the CPU)");
  }
  if (level) {
    const std::string& v = level->args.size() == 1 ? level->args[0] : "";
    if (v.size() == 1 && v[0] >= '1' && v[0] <= '9') {
      m.compression.push_back({"level", "{ gzip = " + v + " }", origin(*level)});
      l.carry(*level);
    } else {
      l.note(*level, "not carried over: gzip_comp_level is 1..9");
    }
  }
}

}  // namespace tlsfront::tools::nginx::detail
