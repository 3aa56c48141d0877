// The certificate store's sealing (AES-256-GCM under the operator's keys) and
// entries: round trips, and refusal of a wrong key, tampered bytes, a key
// moved to another entry or chain, and entries that fail the loader's checks.
// Real OpenSSL, the test PKI (scripts/gen-test-pki.sh).
#include "tls/sealed_key.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_pki.h"
#include "tls/store_entry.h"

namespace tlsfront::tls {
namespace {

using testing::kPki;

std::string file(const std::string& name) {
  std::ifstream in(kPki + "/" + name, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

SealKeyRing ring(std::vector<std::string> keys) {
  auto r = SealKeyRing::from_keys(std::move(keys));
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

const std::string kKeyA(32, 'a'), kKeyB(32, 'b');

TEST(SealedKey, RoundTripUnderTheFirstKeyAndOpensWithAnyOfTheRing) {
  SealKeyRing a = ring({kKeyA});
  auto sealed = a.seal("secret key bytes", "aad");
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(sealed->size(), 12 + 16 + 16u);
  EXPECT_EQ(sealed->find("secret"), std::string::npos);
  auto opened = a.unseal(a.sealing_id(), *sealed, "aad");
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  EXPECT_EQ(opened->str(), "secret key bytes");
  // Rotation: B seals now, A still opens what it sealed.
  SealKeyRing ba = ring({kKeyB, kKeyA});
  EXPECT_EQ(ba.sealing_id(), seal_key_id(kKeyB));
  ASSERT_TRUE(ba.unseal(seal_key_id(kKeyA), *sealed, "aad").ok());
  EXPECT_NE(seal_key_id(kKeyA), seal_key_id(kKeyB));
  EXPECT_EQ(seal_key_id(kKeyA).size(), 16u);
}

TEST(SealedKey, WrongKeyTamperingAndOtherDataAreRefused) {
  SealKeyRing a = ring({kKeyA});
  auto sealed = a.seal("secret", "aad");
  ASSERT_TRUE(sealed.ok());
  // A ring without the sealing key.
  auto no_key = ring({kKeyB}).unseal(a.sealing_id(), *sealed, "aad");
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.error().message().find("none of this node's seal_key_files"), std::string::npos);
  // The right id pointing at another key's bytes (a forged id).
  auto forged = ring({kKeyB}).unseal(seal_key_id(kKeyB), *sealed, "aad");
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.error().message().find("does not open"), std::string::npos);
  for (size_t i = 0; i < sealed->size(); i += 7) {
    std::string bad = *sealed;
    bad[i] = static_cast<char>(bad[i] ^ 1);
    EXPECT_FALSE(a.unseal(a.sealing_id(), bad, "aad").ok()) << "flipped byte " << i;
  }
  EXPECT_FALSE(a.unseal(a.sealing_id(), *sealed, "other aad").ok());
  EXPECT_FALSE(a.unseal(a.sealing_id(), sealed->substr(0, 20), "aad").ok());
  EXPECT_FALSE(SealKeyRing::from_keys({std::string(31, 'x')}).ok());
}

class StoreEntryTest : public ::testing::Test {
 protected:
  void SetUp() override { tls_.trusted_ca = kPki + "/root.pem"; }

  StoreEntry seal(const std::string& name, const std::string& cert, const std::string& key,
                  const SealKeyRing& keys) {
    Secret k(file(key));
    auto e = seal_entry("eu-west", name, 1000, {{file(cert), &k}}, keys);
    EXPECT_TRUE(e.ok()) << e.error().message();
    return std::move(e).value();
  }

  std::string refusal(const StoreEntry& e, const SealKeyRing& keys) {
    auto opened = open_entry(e, keys, tls_, std::chrono::system_clock::now());
    EXPECT_FALSE(opened.ok());
    return opened.ok() ? std::string() : opened.error().message();
  }

  config::Tls tls_;
};

TEST_F(StoreEntryTest, OpensAsTheLoaderWouldAndSurvivesTheDiskFormat) {
  SealKeyRing keys = ring({kKeyA});
  StoreEntry e = seal("localhost", "localhost.chain.pem", "localhost.key", keys);
  EXPECT_EQ(e.key_id, keys.sealing_id());
  EXPECT_EQ(e.pairs[0].sealed_key.find("PRIVATE KEY"), std::string::npos);
  auto back = StoreEntry::from_file(e.to_file());
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->fields(), e.fields());
  EXPECT_EQ(back->region, "eu-west");
  auto opened = open_entry(*back, keys, tls_, std::chrono::system_clock::now());
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  ASSERT_EQ((*opened)->certs.size(), 1u);
  EXPECT_EQ((*opened)->certs[0].key_type, "ECDSA");
  EXPECT_TRUE((*opened)->certs[0].from_store);
  EXPECT_EQ((*opened)->certs[0].names, std::vector<std::string>{"localhost"});
  // An ECDSA + RSA pair is one entry.
  Secret ec(file("localhost.key")), rsa(file("rsa.key"));
  auto pair = seal_entry("eu-west", "localhost", 1, {{file("localhost.chain.pem"), &ec}, {file("rsa.chain.pem"), &rsa}},
                         keys);
  ASSERT_TRUE(pair.ok());
  auto both = open_entry(*pair, keys, tls_, std::chrono::system_clock::now());
  ASSERT_TRUE(both.ok()) << both.error().message();
  EXPECT_EQ((*both)->certs[1].key_type, "RSA");
}

TEST_F(StoreEntryTest, RefusesWhatTheLoaderRefusesAndWhatWasAltered) {
  SealKeyRing keys = ring({kKeyA});
  EXPECT_NE(refusal(seal("localhost", "localhost.chain.pem", "mismatch.key", keys), keys).find("does not match"),
            std::string::npos);
  EXPECT_NE(refusal(seal("localhost", "leaf-only.pem", "localhost.key", keys), keys).find("incomplete"),
            std::string::npos);
  EXPECT_NE(refusal(seal("localhost", "expired.chain.pem", "expired.key", keys), keys).find("expired"),
            std::string::npos);
  EXPECT_NE(refusal(seal("api.example.com", "localhost.chain.pem", "localhost.key", keys), keys).find("not covered"),
            std::string::npos);
  // A chain swapped next to a sealed key, a key moved to another name.
  StoreEntry e = seal("localhost", "localhost.chain.pem", "localhost.key", keys);
  StoreEntry swapped = e;
  swapped.pairs[0].chain_pem = file("rsa.chain.pem");
  EXPECT_NE(refusal(swapped, keys).find("does not open"), std::string::npos);
  StoreEntry moved = e;
  moved.name = "other.example";
  EXPECT_NE(refusal(moved, keys).find("does not open"), std::string::npos);
  StoreEntry hashed = e;
  hashed.hash[0] = hashed.hash[0] == '0' ? '1' : '0';
  EXPECT_NE(refusal(hashed, keys).find("hash"), std::string::npos);
  EXPECT_NE(refusal(e, ring({kKeyB})).find("seal_key_files"), std::string::npos);
  // Reseal under a new first key opens with a ring that no longer has the old one.
  auto resealed = reseal_entry(e, ring({kKeyB, kKeyA}), 2000);
  ASSERT_TRUE(resealed.ok());
  EXPECT_EQ(resealed->updated_at, 2000u);
  EXPECT_TRUE(open_entry(*resealed, ring({kKeyB}), tls_, std::chrono::system_clock::now()).ok());
}

TEST(StoreEntryFields, MalformedEntriesAreRefusedWithTheReason) {
  using Fields = std::vector<std::pair<std::string, std::string>>;
  const Fields good = {{"updated_at", "5"}, {"key_id", std::string(16, 'a')}, {"hash", std::string(64, 'b')},
                       {"pairs", "1"}, {"chain1", "x"}, {"key1", "y"}};
  EXPECT_TRUE(StoreEntry::from_fields("r", "a.example", good).ok());
  EXPECT_FALSE(StoreEntry::from_fields("r", "A.example", good).ok());
  EXPECT_FALSE(StoreEntry::from_fields("r", "a..example", good).ok());
  EXPECT_FALSE(StoreEntry::from_fields("R!", "a.example", good).ok());
  EXPECT_TRUE(StoreEntry::from_fields("r", "*.example", good).ok());
  Fields no_pair = good;
  no_pair[3].second = "2";
  EXPECT_NE(StoreEntry::from_fields("r", "a.example", no_pair).error().message().find("pair 2"), std::string::npos);
  Fields zero = good;
  zero[0].second = "0";
  EXPECT_FALSE(StoreEntry::from_fields("r", "a.example", zero).ok());
  EXPECT_FALSE(StoreEntry::from_file("region 3\nabc").ok());
  EXPECT_FALSE(StoreEntry::from_file("region 999999\nabc\n").ok());
}

}  // namespace
}  // namespace tlsfront::tls
