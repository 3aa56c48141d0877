#include "message/accept_encoding.h"

namespace tlsfront::http {
namespace {

constexpr int kMalformed = 0;  // a weight that does not parse: not acceptable

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
int parse_qvalue(std::string_view s) {
  if (s.empty() || (s[0] != '0' && s[0] != '1')) return kMalformed;
  int value = s[0] == '1' ? 1000 : 0;
  if (s.size() == 1) return value;
  if (s[1] != '.' || s.size() > 5) return kMalformed;
  int scale = 100;
  for (char c : s.substr(2)) {
    if (c < '0' || c > '9') return kMalformed;
    value += (c - '0') * scale;
    scale /= 10;
  }
  return value > 1000 ? kMalformed : value;
}

// The weight of one element's parameters (after the coding): 1000 without q.
int element_weight(std::string_view params) {
  int weight = 1000;
  while (!params.empty()) {
    // params starts at a ';'
    params.remove_prefix(1);
    const size_t end = params.find(';');
    std::string_view param = trim_ows(params.substr(0, end));
    params = end == std::string_view::npos ? std::string_view() : params.substr(end);
    // RFC 9110 §12.4.2 has no whitespace around "=", but "q =0" still means
    // a weight: read it (as 0 when malformed), never as "no weight".
    const size_t eq = param.find('=');
    const std::string_view name = trim_ows(param.substr(0, eq));
    if (eq != std::string_view::npos && (name == "q" || name == "Q")) weight = parse_qvalue(param.substr(eq + 1));
  }
  return weight;
}

bool same_coding(std::string_view listed, std::string_view coding) {
  if (iequals(listed, coding)) return true;
  return coding == "gzip" && iequals(listed, "x-gzip");
}

// Calls f(coding, weight) for each element of `accept`.
template <typename F>
void for_each_element(std::string_view accept, F&& f) {
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    std::string_view element = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    const size_t semi = element.find(';');
    std::string_view coding = trim_ows(element.substr(0, semi));
    if (coding.empty()) continue;  // "#" lists allow empty elements
    f(coding, semi == std::string_view::npos ? 1000 : element_weight(element.substr(semi)));
  }
}

struct Weights {
  int coding = -1;    // the coding's own element (the highest, if repeated)
  int star = -1;      // "*"
  int identity = -1;  // an explicit "identity"
  int effective() const { return coding >= 0 ? coding : star; }
};

void collect(std::string_view accept, std::string_view coding, Weights& w) {
  for_each_element(accept, [&](std::string_view listed, int weight) {
    if (same_coding(listed, coding)) {
      if (weight > w.coding) w.coding = weight;
    } else if (listed == "*") {
      if (weight > w.star) w.star = weight;
    } else if (iequals(listed, "identity")) {
      if (weight > w.identity) w.identity = weight;
    }
  });
}

template <typename Collect>
std::optional<size_t> choose(std::span<const std::string_view> offered, Collect&& collect_into) {
  std::optional<size_t> best;
  int best_weight = 0;
  int identity = -1;
  for (size_t i = 0; i < offered.size(); ++i) {
    Weights w;
    collect_into(offered[i], w);
    identity = w.identity;
    const int weight = w.effective();
    if (weight > best_weight) {  // strictly: a tie keeps the server's earlier choice
      best = i;
      best_weight = weight;
    }
  }
  if (best && identity > best_weight) return std::nullopt;
  return best;
}

}  // namespace

int accept_weight(std::string_view accept, std::string_view coding) {
  Weights w;
  collect(accept, coding, w);
  return w.effective();
}

std::optional<size_t> negotiate_encoding(std::string_view accept, std::span<const std::string_view> offered) {
  return choose(offered, [accept](std::string_view coding, Weights& w) { collect(accept, coding, w); });
}

std::optional<size_t> negotiate_encoding(const std::vector<Header>& headers,
                                         std::span<const std::string_view> offered) {
  bool any = false;
  for (const auto& h : headers) any = any || iequals(h.name, "accept-encoding");
  if (!any) return std::nullopt;
  return choose(offered, [&headers](std::string_view coding, Weights& w) {
    for (const auto& h : headers) {
      if (iequals(h.name, "accept-encoding")) collect(h.value, coding, w);
    }
  });
}

}  // namespace tlsfront::http
