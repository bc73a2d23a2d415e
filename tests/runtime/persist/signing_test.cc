// SHA-256 / HMAC-SHA-256 come from libcrypto: checked against the published
// test vectors (FIPS 180-2, RFC 4231), and the key-file rules.
#include "runtime/persist/signing.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace shapeshift::runtime::persist {
namespace {

std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

TEST(SigningTest, Sha256MatchesTheFipsVector) {
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(SigningTest, HmacSha256MatchesRfc4231TestCase2) {
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SigningTest, DigestsEqualComparesWholeDigests) {
  const std::string a = HmacSha256("key-one-key-one!", "payload");
  EXPECT_TRUE(DigestsEqual(a, a));
  std::string b = a;
  b[31] ^= 1;
  EXPECT_FALSE(DigestsEqual(a, b));
  EXPECT_FALSE(DigestsEqual(a, a.substr(0, 16)));
}

TEST(SigningTest, StreamsInPiecesGiveTheWholeDigests) {
  Sha256Stream sha;
  sha.Update("a");
  sha.Update("");
  sha.Update("bc");
  EXPECT_EQ(Hex(sha.Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  HmacSha256Stream mac("Jefe");
  mac.Update("what do ya want ");
  mac.Update("for nothing?");
  EXPECT_EQ(Hex(mac.Finish()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  HmacSha256Stream unkeyed("");
  unkeyed.Update("anything");
  EXPECT_EQ(unkeyed.Finish(), "");
}

std::string WriteKey(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/signing_test_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(SigningTest, KeyFileDropsTrailingNewlineAndRefusesShortKeys) {
  absl::StatusOr<std::string> key = ReadSigningKeyFile(WriteKey("ok", "0123456789abcdef0123\n"));
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, "0123456789abcdef0123");
  absl::StatusOr<std::string> short_key = ReadSigningKeyFile(WriteKey("short", "tooshort\n"));
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.status().message().find("at least 16"), std::string::npos) << short_key.status();
  absl::StatusOr<std::string> missing = ReadSigningKeyFile(::testing::TempDir() + "/signing_test_missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("signing_test_missing"), std::string::npos);
}

}  // namespace
}  // namespace shapeshift::runtime::persist
