#include "message/grpc.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

Header h(std::string name, std::string value) { return Header{std::move(name), std::move(value)}; }

TEST(Grpc, ACallIsAnApplicationGrpcContentType) {
  RequestHead r;
  r.headers = {h("Content-Type", "application/grpc+proto")};
  EXPECT_TRUE(is_grpc(r));
  r.headers = {h("content-type", "APPLICATION/GRPC")};
  EXPECT_TRUE(is_grpc(r));
  r.headers = {h("content-type", "application/json")};
  EXPECT_FALSE(is_grpc(r));
  r.headers = {h("content-type", "application/grp")};
  EXPECT_FALSE(is_grpc(r));
  r.headers = {};
  EXPECT_FALSE(is_grpc(r));
}

TEST(Grpc, MessagesArePercentEncoded) {
  EXPECT_EQ(grpc_message("upstream unreachable"), "upstream unreachable");
  EXPECT_EQ(grpc_message("100% \xc3\xa9\n"), "100%25 %C3%A9%0A");
  auto fields = grpc_status_fields(kGrpcUnavailable, "down");
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].name, "grpc-status");
  EXPECT_EQ(fields[0].value, "14");
  EXPECT_EQ(fields[1].name, "grpc-message");
  EXPECT_EQ(fields[1].value, "down");
}

TEST(Grpc, StatusIsOneToFourDigits) {
  EXPECT_EQ(grpc_status_of({h("grpc-message", "x"), h("Grpc-Status", "0")}), 0);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "16")}), 16);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "9999")}), 9999);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "10000")}), std::nullopt);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "")}), std::nullopt);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "1a")}), std::nullopt);
  EXPECT_EQ(grpc_status_of({h("grpc-status", "-1")}), std::nullopt);
  EXPECT_EQ(grpc_status_of({}), std::nullopt);
}

}  // namespace
}  // namespace tlsfront::http
