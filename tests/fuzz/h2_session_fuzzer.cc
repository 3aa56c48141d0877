// Fuzz target h2_session: the bytes are the frames a client sends on one
// HTTP/2 connection after the connection preface (which the rig sends),
// into an Http2Session (nghttp2 server session, our frame and stream
// callbacks, flood and reset budgets, Http2Stream) whose streams go to a
// real upstream on loopback answering 200 "ok" (DataPathRig).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data_path_rig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tlsfront::fuzz::DataPathRig::get().run(tlsfront::fuzz::DataPathRig::Protocol::Http2,
                                         std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
