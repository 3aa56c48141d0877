// The access-log field table of docs/operations.md against a real log line:
// every key tlsfront writes is documented there, and every field documented
// there is written. The table is the one under the heading "### Access-log
// fields": the backquoted names in the first cell of each row.
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "harness.h"

namespace tlsfront::itest {
namespace {

// The field names of the table under `heading`, up to the next heading.
std::set<std::string> documented_fields(const std::string& doc, std::string_view heading) {
  std::set<std::string> fields;
  size_t at = doc.find(std::string("\n") + std::string(heading) + "\n");
  if (at == std::string::npos) return fields;
  size_t pos = doc.find('\n', at + 1) + 1;
  while (pos < doc.size()) {
    size_t end = doc.find('\n', pos);
    if (end == std::string::npos) end = doc.size();
    std::string_view line(doc.data() + pos, end - pos);
    pos = end + 1;
    if (line.starts_with("#")) break;
    if (!line.starts_with("| `")) continue;
    std::string_view cell = line.substr(1, line.find('|', 1) - 1);
    for (size_t open = cell.find('`'); open != std::string_view::npos; open = cell.find('`', open)) {
      size_t close = cell.find('`', open + 1);
      if (close == std::string_view::npos) break;
      fields.emplace(cell.substr(open + 1, close - open - 1));
      open = close + 1;
    }
  }
  return fields;
}

class DocsAccessLog : public ProxyTest {};

TEST_F(DocsAccessLog, EveryFieldOfARealLineIsInTheReferenceAndEveryDocumentedFieldIsWritten) {
  const std::string doc_path = std::string(TLSFRONT_SOURCE_DIR) + "/docs/operations.md";
  const std::set<std::string> documented = documented_fields(read_file(doc_path), "### Access-log fields");
  ASSERT_FALSE(documented.empty()) << doc_path << " has no field table under \"### Access-log fields\"";

  // The client's address from a trusted proxy's header: the line then has
  // peer_addr too (written only when it differs from remote_addr). The
  // second request is delayed by a limit_req zone (burst 1 at 1 r/s): its
  // line has `limit`.
  ProxyOptions o;
  o.workers = 1;
  o.listen_extra = "trusted_proxies = [\"127.0.0.1\"]\n";
  // A file route's line has `cache`.
  std::filesystem::create_directories(dir_.file("www"));
  write_file(dir_.file("www/f.txt"), "file\n");
  o.routes = "[[route]]\npath_prefix = \"/files/\"\nalias = \"" + dir_.file("www") + "\"\n"
             "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"docs\"]\n";
  o.extra = "[[limit_req]]\nname = \"docs\"\nrate = \"1r/s\"\nburst = 1\n";
  // A client certificate asked for: the ssl_client_* fields are written
  // (ssl_client_verify "NONE", the others null).
  o.tls_extra = "client_ca = \"" + pki("root.pem") + "\"\nverify_client = \"optional\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpRequest req;
  req.path = "/docs";
  req.headers = {"X-Forwarded-For: 192.0.2.7"};
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = http(port(), req);
    ASSERT_EQ(r.status, 200) << r.error;
  }
  req.path = "/files/f.txt";
  ASSERT_EQ(http(port(), req).status, 200);
  std::vector<std::string> lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  const std::string& limited = lines[1];
  simdjson::dom::parser file_parser;
  simdjson::dom::object file_line;
  ASSERT_EQ(file_parser.parse(lines[2]).get(file_line), simdjson::SUCCESS) << lines[2];

  simdjson::dom::parser parser;
  simdjson::dom::object line;
  ASSERT_EQ(parser.parse(limited).get(line), simdjson::SUCCESS) << limited;
  std::set<std::string> logged;
  for (auto field : line) {
    std::string key(field.key);
    logged.insert(key);
    EXPECT_TRUE(documented.count(key)) << "the access log writes \"" << key << "\", which " << doc_path
                                       << " does not document (add it to the table under \"### Access-log fields\")";
  }
  for (auto field : file_line) logged.insert(std::string(field.key));
  for (const std::string& key : documented) {
    EXPECT_TRUE(logged.count(key)) << doc_path << " documents the access-log field \"" << key
                                   << "\", which a log line does not have: " << limited;
  }
}

}  // namespace
}  // namespace tlsfront::itest
