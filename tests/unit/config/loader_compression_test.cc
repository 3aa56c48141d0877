// [compression] (the defaults) and a [[route]]'s compress* keys: values,
// inheritance per key and per codec level, and the errors with positions.
#include "config/loader_test_support.h"

namespace tlsfront::config {
namespace {

TEST(LoaderCompression, OffByDefaultWithNginxLikeDefaults) {
  Config c = load_ok(std::string(kMinimal));
  EXPECT_TRUE(c.compression.encodings.empty());
  ASSERT_EQ(c.routes.size(), 1u);
  const Compression& r = c.routes[0].compression;
  EXPECT_TRUE(r.encodings.empty());
  EXPECT_EQ(r.types,
            (std::vector<std::string>{"application/json", "text/*", "application/javascript", "image/svg+xml"}));
  EXPECT_EQ(r.min_bytes, 1024u);
  EXPECT_EQ(r.gzip_level, 1);
  EXPECT_EQ(r.brotli_level, 4);
  EXPECT_EQ(r.max_memory, uint64_t{64} << 20);
}

// max_memory is per worker and top-level: every route carries it, none sets it.
TEST(LoaderCompression, MaxMemoryIsTopLevelOnly) {
  Config c = load_ok(with("\n[compression]\nencodings = [\"gzip\"]\nmax_memory = \"8m\"\n"));
  EXPECT_EQ(c.routes[0].compression.max_memory, uint64_t{8} << 20);
  EXPECT_EQ(load_error(with("\n[compression]\nmax_memory = \"512k\"\n")).substr(0, 44),
            "t.toml:16:1: compression.max_memory: must be");
  EXPECT_EQ(load_error(with("max_memory = \"8m\"\n")), R"(t.toml:14:1: route[0].max_memory: unknown key "max_memory")");
}

TEST(LoaderCompression, RouteKeysReplaceTheDefaultsOneByOne) {
  Config c = load_ok(with(R"(compress_level = { br = 6 }

[[route]]
path_prefix = "/b/"
upstream = "demo"
compress = []

[[route]]
path_prefix = "/c/"
upstream = "demo"
compress = ["gzip"]
compress_types = ["Text/HTML", "application/*"]
compress_min_bytes = "256"

[compression]
encodings = ["br", "gzip"]
min_bytes = "2k"
level = { gzip = 5 }
)"));
  EXPECT_EQ(c.compression.encodings, (std::vector<std::string>{"br", "gzip"}));
  const Compression& a = c.routes[0].compression;
  EXPECT_EQ(a.encodings, (std::vector<std::string>{"br", "gzip"}));
  EXPECT_EQ(a.min_bytes, 2048u);
  EXPECT_EQ(a.gzip_level, 5);                              // the default's
  EXPECT_EQ(a.brotli_level, 6);                            // the route's
  EXPECT_TRUE(c.routes[1].compression.encodings.empty());  // compress = [] turns it off here
  const Compression& b = c.routes[2].compression;
  EXPECT_EQ(b.encodings, (std::vector<std::string>{"gzip"}));
  EXPECT_EQ(b.types, (std::vector<std::string>{"text/html", "application/*"}));
  EXPECT_EQ(b.min_bytes, 256u);
  EXPECT_EQ(b.gzip_level, 5);
  EXPECT_EQ(b.brotli_level, 4);
}

TEST(LoaderCompression, ErrorsNameThePlace) {
  EXPECT_EQ(
      load_error(with("compress = [\"gzip\", \"zstd\"]\n")),
      R"(t.toml:14:21: route[0].compress[1]: unknown content coding "zstd": tlsfront compresses with "br" and "gzip")");
  EXPECT_EQ(
      load_error(with("compress = [\"deflate\"]\n")),
      R"(t.toml:14:13: route[0].compress[0]: unknown content coding "deflate": tlsfront compresses with "br" and "gzip" (deflate is not offered: clients disagree on its framing, RFC 9110 §8.4.1.2))");
  EXPECT_EQ(load_error(with("compress = [\"gzip\", \"gzip\"]\n")),
            R"(t.toml:14:21: route[0].compress[1]: duplicate content coding "gzip")");
  EXPECT_EQ(load_error(with("compress = \"gzip\"\n")),
            R"(t.toml:14:1: route[0].compress: expected an array, got string)");
  EXPECT_EQ(load_error(with("compress_level = { gzip = 0 }\n")),
            R"(t.toml:14:20: route[0].compress_level.gzip: must be between 1 and 9, got 0)");
  EXPECT_EQ(load_error(with("compress_level = { br = 12 }\n")),
            R"(t.toml:14:20: route[0].compress_level.br: must be between 0 and 11, got 12)");
  EXPECT_EQ(load_error(with("compress_level = { zstd = 3 }\n")),
            R"(t.toml:14:20: route[0].compress_level.zstd: unknown key "zstd")");
  EXPECT_EQ(
      load_error(with("compress_types = [\"json\"]\n")),
      R"(t.toml:14:19: route[0].compress_types[0]: invalid media type "json" ("type/subtype" or "type/*", no parameters, RFC 9110 §8.3.1))");
  EXPECT_EQ(
      load_error(with("compress_types = [\"text/html; charset=utf-8\"]\n")),
      R"(t.toml:14:19: route[0].compress_types[0]: invalid media type "text/html; charset=utf-8" ("type/subtype" or "type/*", no parameters, RFC 9110 §8.3.1))");
  EXPECT_EQ(
      load_error(with("compress_types = []\n")),
      R"(t.toml:14:1: route[0].compress_types: must not be empty (to turn compression off, leave the encodings empty))");
  EXPECT_EQ(load_error(with("compress_min_bytes = \"1x\"\n")).substr(0, 38), "t.toml:14:1: route[0].compress_min_byt");
  EXPECT_EQ(load_error(with("\n[compression]\nencodings = [\"gzip\"]\nlevels = 3\n")),
            R"(t.toml:17:1: compression.levels: unknown key "levels")");
}

}  // namespace
}  // namespace tlsfront::config
