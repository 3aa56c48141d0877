#include "data/http/extended_connect.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

const Header* field(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& h : headers) {
    if (iequals(h.name, name)) return &h;
  }
  return nullptr;
}

TEST(ExtendedConnect, AcceptIsRfc6455Example) {
  // RFC 6455 §1.3.
  EXPECT_EQ(websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(ExtendedConnect, WebSocketBecomesAnUpgradeGetWithOurKey) {
  RequestHead req;
  req.method = "CONNECT";
  req.target = "/chat";
  req.content_length = 5;
  req.headers = {{"sec-websocket-version", "13"},
                 {"sec-websocket-key", "c2VudCBieSB0aGUgY2xpZW50", HeaderToken::Other},
                 {"content-length", "5", HeaderToken::ContentLength},
                 {"sec-websocket-protocol", "chat"}};
  const std::string accept = map_extended_connect(req, "WebSocket");
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/chat");
  EXPECT_EQ(req.upgrade, "websocket");
  EXPECT_TRUE(req.extended_connect);
  EXPECT_FALSE(req.has_body());
  EXPECT_EQ(field(req.headers, "content-length"), nullptr);
  ASSERT_NE(field(req.headers, "sec-websocket-protocol"), nullptr);
  const Header* key = field(req.headers, "sec-websocket-key");
  ASSERT_NE(key, nullptr);
  EXPECT_NE(key->value, "c2VudCBieSB0aGUgY2xpZW50") << "the client's key went up";
  EXPECT_EQ(key->value.size(), 24u);  // 16 bytes, base64
  EXPECT_EQ(accept, websocket_accept(key->value));
  RequestHead again = req;
  again.method = "CONNECT";
  EXPECT_NE(map_extended_connect(again, "websocket"), accept) << "the key is not random";
}

TEST(ExtendedConnect, OtherProtocolsGetNoKey) {
  RequestHead req;
  req.method = "CONNECT";
  EXPECT_EQ(map_extended_connect(req, "connect-udp"), "");
  EXPECT_EQ(req.upgrade, "connect-udp");
  EXPECT_EQ(field(req.headers, "sec-websocket-key"), nullptr);
}

TEST(ExtendedConnect, The101MustCarryExactlyOurAccept) {
  const std::string accept = websocket_accept("dGhlIHNhbXBsZSBub25jZQ==");
  ResponseHead ok;
  ok.headers = {{"Sec-WebSocket-Accept", accept}, {"Sec-WebSocket-Protocol", "chat"}};
  EXPECT_TRUE(accept_upgrade_response(ok, accept));
  EXPECT_EQ(field(ok.headers, "sec-websocket-accept"), nullptr) << "RFC 8441 clients expect none";
  EXPECT_NE(field(ok.headers, "sec-websocket-protocol"), nullptr);

  ResponseHead wrong;
  wrong.headers = {{"Sec-WebSocket-Accept", "AAAAAAAAAAAAAAAAAAAAAAAAAAA="}};
  EXPECT_FALSE(accept_upgrade_response(wrong, accept));
  ResponseHead none;
  EXPECT_FALSE(accept_upgrade_response(none, accept));
  ResponseHead two;
  two.headers = {{"Sec-WebSocket-Accept", accept}, {"Sec-WebSocket-Accept", accept}};
  EXPECT_FALSE(accept_upgrade_response(two, accept));
  ResponseHead unchecked;
  EXPECT_TRUE(accept_upgrade_response(unchecked, ""));
}

}  // namespace
}  // namespace tlsfront::http
