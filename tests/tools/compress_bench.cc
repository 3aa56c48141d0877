// tlsfront_compress_bench: CPU and ratio of tlsfront's response compressors
// (message/gzip_encoder.h, message/brotli_encoder.h) on the 20 KB JSON body
// of scripts/bench.sh's h1_gzip_rps row (tests/shared/json_body.h), driven as
// the proxy drives them: one write() of the body as it arrives in one read,
// then finish(). Prints one line per codec and level: the compressed size,
// the ratio, CPU microseconds per body and CPU milliseconds per MB of input
// (thread CPU time, best of --rounds), and the codec state's peak bytes.
//
//   tlsfront_compress_bench [--bytes N] [--iterations N] [--rounds N]
//   tlsfront_compress_bench --write FILE [--bytes N]   writes the body to FILE (scripts/bench.sh)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "message/brotli_encoder.h"
#include "message/gzip_encoder.h"
#include "shared/json_body.h"

namespace {

using tlsfront::http::ContentEncoder;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <typename Make>
void measure(const char* label, const std::string& body, int iterations, int rounds, Make make) {
  std::string out;
  size_t compressed = 0, peak = 0;
  double best = 1e100;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = thread_cpu_seconds();
    for (int i = 0; i < iterations; ++i) {
      auto e = make();
      if (!e) {
        std::fprintf(stderr, "%s: encoder could not be created\n", label);
        std::exit(1);
      }
      out.clear();
      if (!e->write(body, out)) std::exit(1);
      if (e->state_bytes() > peak) peak = e->state_bytes();
      if (!e->finish(out)) std::exit(1);
      if (e->state_bytes() > peak) peak = e->state_bytes();
      compressed = out.size();
    }
    const double per = (thread_cpu_seconds() - t0) / iterations;
    if (per < best) best = per;
  }
  const double mb = static_cast<double>(body.size()) / 1e6;
  std::printf("%-22s %8zu bytes  ratio %5.2f  %7.1f us/body  %6.2f ms/MB in  %6.2f ms/MB out  state %4zu KiB\n", label,
              compressed, static_cast<double>(body.size()) / static_cast<double>(compressed), best * 1e6,
              best * 1e3 / mb, best * 1e3 / (static_cast<double>(compressed) / 1e6), peak / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 20 * 1024;
  int iterations = 2000, rounds = 5;
  const char* write_to = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--bytes"))
      bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--write"))
      write_to = argv[i + 1];
    else if (!std::strcmp(argv[i], "--iterations"))
      iterations = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
  }
  const std::string body = tlsfront::testdata::json_body(bytes);
  if (write_to != nullptr) {
    std::FILE* f = std::fopen(write_to, "wb");
    const bool ok = f != nullptr && std::fwrite(body.data(), 1, body.size(), f) == body.size();
    if (f != nullptr && std::fclose(f) != 0) return 1;
    return ok ? 0 : 1;
  }
  std::printf("body: %zu bytes of JSON; %d bodies per round, best of %d rounds\n", body.size(), iterations, rounds);
  using tlsfront::http::BrotliEncoder;
  using tlsfront::http::GzipEncoder;
  char label[64];
  for (int level = 1; level <= 6; ++level) {
    std::snprintf(label, sizeof label, "gzip %d", level);
    measure(label, body, iterations, rounds, [&] { return GzipEncoder::create(level, body.size()); });
  }
  for (int level = 1; level <= 6; ++level) {
    std::snprintf(label, sizeof label, "gzip %d unknown length", level);
    measure(label, body, iterations, rounds, [&] { return GzipEncoder::create(level, std::nullopt); });
  }
  for (int wbits : {13, 15}) {
    std::snprintf(label, sizeof label, "gzip 1 window %d", wbits);
    measure(label, body, iterations, rounds, [&] { return GzipEncoder::create(1, std::nullopt, wbits, wbits - 7); });
  }
  for (int level = 0; level <= 6; ++level) {
    std::snprintf(label, sizeof label, "br %d", level);
    measure(label, body, iterations, rounds, [&] { return BrotliEncoder::create(level, body.size()); });
  }
  for (int level = 1; level <= 5; ++level) {
    std::snprintf(label, sizeof label, "br %d unknown length", level);
    measure(label, body, iterations, rounds, [&] { return BrotliEncoder::create(level, std::nullopt); });
  }
  return 0;
}
