#include "control/certificate_metrics.h"

#include <fmt/format.h>
#include <openssl/asn1.h>
#include <openssl/x509.h>

#include <set>

#include "metrics/prometheus.h"
#include "tls/certificate_labels.h"

namespace tlsfront::control {

std::string certificate_metrics(const tls::CertIndex& index, std::chrono::system_clock::time_point now) {
  std::string out =
      "# HELP tlsfront_certificate_expiry_seconds The served certificate's notAfter minus now (negative once "
      "expired).\n# TYPE tlsfront_certificate_expiry_seconds gauge\n";
  const time_t now_t = std::chrono::system_clock::to_time_t(now);
  std::set<std::string> seen;  // one series per certificate, however many entries serve it
  for (const tls::ServerCertificate* c : index.certificates()) {
    const tls::ServerCertificate& cert = *c;
    X509* leaf = cert.chain.leaf();
    if (leaf == nullptr) continue;
    const tls::CertificateLabels l = tls::CertificateLabels::of(leaf);
    const std::string labels =
        fmt::format("certificate=\"{}\",key_type=\"{}\",sha256=\"{}\",source=\"{}\"",
                    metrics::escape_label_value(l.subject), l.key_type, l.sha256, cert.from_store ? "store" : "file");
    if (!seen.insert(labels).second) continue;
    int days = 0, secs = 0;
    ASN1_TIME* now_asn1 = ASN1_TIME_set(nullptr, now_t);
    const bool ok = now_asn1 != nullptr && ASN1_TIME_diff(&days, &secs, now_asn1, X509_get0_notAfter(leaf)) == 1;
    ASN1_TIME_free(now_asn1);
    if (!ok) continue;
    fmt::format_to(std::back_inserter(out), "tlsfront_certificate_expiry_seconds{{{}}} {}\n", labels,
                   static_cast<int64_t>(days) * 86400 + secs);
  }
  return out;
}

}  // namespace tlsfront::control
