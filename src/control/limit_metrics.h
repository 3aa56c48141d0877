// The client limits' exposition text for /metrics (docs/operations.md,
// "Metrics"): per [[limit_req]] and [[limit_conn]] zone of the current
// generation, its requests by result and the keys it tracks; the node's
// per-address connection and handshake tables' sizes.
// Thread affinity: any thread (the zones' counters are atomics).
#pragma once

#include <string>

#include "data/generation.h"

namespace tlsfront::control {

std::string limit_metrics(const data::Generation& gen);

}  // namespace tlsfront::control
