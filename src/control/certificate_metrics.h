// /metrics series about the certificates the current configuration serves:
//   tlsfront_certificate_expiry_seconds{certificate,key_type,sha256}
//     the leaf's notAfter minus now (negative once expired)
// labelled as the OCSP series are (tls/certificate_labels.h), so that an
// alert or a dashboard joins them. The commonest TLS outage is an expired
// certificate: this lets Prometheus see it coming from the server itself.
// Thread affinity: the control thread (a scrape).
#pragma once

#include <chrono>
#include <string>

#include "tls/cert_index.h"

namespace tlsfront::control {

std::string certificate_metrics(const tls::CertIndex& index, std::chrono::system_clock::time_point now);

}  // namespace tlsfront::control
