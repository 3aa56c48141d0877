#include "data/client_admission.h"

namespace tlsfront::data {

const std::shared_ptr<ConcurrencyTable>& client_connections() {
  static const auto table = std::make_shared<ConcurrencyTable>(kClientConnectionsBytes);
  return table;
}

}  // namespace tlsfront::data
