#include "hsload/http_response.h"

#include <strings.h>

namespace tlsfront::hsload {

HttpResponse::Status HttpResponse::feed(ByteView data) {
  if (!head_done_) {
    head_.append(reinterpret_cast<const char*>(data.data()), data.size());
    size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos) return head_.size() > kMaxHead ? Status::kTooLarge : Status::kNeedMore;
    if (end + 4 > kMaxHead) return Status::kTooLarge;
    body_ = static_cast<int64_t>(head_.size() - (end + 4));
    head_.resize(end + 2);
    head_done_ = true;
    if (Status s = parse_head(); s != Status::kNeedMore) return s;
  } else {
    body_ += static_cast<int64_t>(data.size());
  }
  if (content_length_ >= 0 && body_ >= content_length_) return Status::kComplete;
  return Status::kNeedMore;
}

HttpResponse::Status HttpResponse::end() {
  if (!head_done_) return Status::kMalformed;
  if (content_length_ >= 0 && body_ < content_length_) return Status::kMalformed;
  return Status::kComplete;
}

HttpResponse::Status HttpResponse::parse_head() {
  // "HTTP/1.1 200 OK\r\n": version, a space, three digits, a space or the line end.
  if (head_.size() < 14 || head_.compare(0, 7, "HTTP/1.") != 0 || head_[8] != ' ') return Status::kMalformed;
  for (size_t i = 9; i < 12; ++i) {
    if (head_[i] < '0' || head_[i] > '9') return Status::kMalformed;
    code_ = code_ * 10 + (head_[i] - '0');
  }
  size_t pos = head_.find("\r\n");
  while (pos + 2 < head_.size()) {
    size_t line = pos + 2;
    pos = head_.find("\r\n", line);
    std::string_view field(head_.data() + line, pos - line);
    constexpr std::string_view kName = "content-length:";
    if (field.size() < kName.size() || strncasecmp(field.data(), kName.data(), kName.size()) != 0) continue;
    if (content_length_ >= 0) return Status::kMalformed;
    std::string_view v = field.substr(kName.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (v.empty() || v.size() > 15) return Status::kMalformed;
    int64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return Status::kMalformed;
      n = n * 10 + (c - '0');
    }
    content_length_ = n;
  }
  return Status::kNeedMore;
}

}  // namespace tlsfront::hsload
