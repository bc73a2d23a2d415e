// The bundle file format (runtime/bundle/bundle_file.h): a round trip, and
// every kind of damage refused before anything is parsed from it — truncated,
// extended, a flipped byte anywhere (checksum), wrong magic or version, and
// the signature rules (a key refuses unsigned or differently signed files; a
// signed file needs the key).
#include "runtime/bundle/bundle_file.h"

#include "gtest/gtest.h"
#include "runtime/persist/signing.h"

namespace shapeshift::runtime::bundle {
namespace {

constexpr char kKey[] = "a-shared-key-of-some-length";

BundleContents Sample() {
  BundleContents c;
  c.header = nlohmann::json{{"format", 1}, {"note", "sample"}};
  c.records.push_back({"model", "onnx", std::string("model-bytes\0with-nul", 20)});
  c.records.push_back({"objects", "0123abcd", std::string(1000, 'x')});
  return c;
}

TEST(BundleFileTest, RoundTripsUnsignedAndSigned) {
  for (const std::string& key : {std::string(), std::string(kKey)}) {
    const std::string bytes = EncodeBundle(Sample(), key);
    absl::StatusOr<BundleContents> back = DecodeBundle(bytes, key, "sample.ssb");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->signed_, !key.empty());
    EXPECT_EQ(back->header["note"], "sample");
    ASSERT_EQ(back->records.size(), 2u);
    EXPECT_EQ(back->records[0].payload, std::string("model-bytes\0with-nul", 20));
    EXPECT_EQ(back->records[1].key, "0123abcd");
  }
}

TEST(BundleFileTest, EveryFlippedByteIsRefused) {
  const std::string bytes = EncodeBundle(Sample(), kKey);
  // Every byte of the preamble and a stride through the body.
  for (size_t i = 0; i < bytes.size(); i += (i < kBundlePreambleSize ? 1 : 37)) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    absl::StatusOr<BundleContents> back = DecodeBundle(damaged, kKey, "x.ssb");
    EXPECT_FALSE(back.ok()) << "byte " << i << " changed and still accepted";
  }
  std::string body_flip = bytes;
  body_flip[kBundlePreambleSize + 20] ^= 1;
  absl::Status s = DecodeBundle(body_flip, kKey, "x.ssb").status();
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s;
  EXPECT_NE(s.message().find("x.ssb"), std::string::npos) << s;
}

TEST(BundleFileTest, TruncatedExtendedAndForeignFilesAreRefused) {
  const std::string bytes = EncodeBundle(Sample(), "");
  EXPECT_NE(DecodeBundle(bytes.substr(0, 40), "", "f").status().message().find("truncated"), std::string::npos);
  EXPECT_NE(DecodeBundle(bytes.substr(0, bytes.size() - 1), "", "f").status().message().find("does not match"),
            std::string::npos);
  EXPECT_NE(DecodeBundle(bytes + "x", "", "f").status().message().find("does not match"), std::string::npos);
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_NE(DecodeBundle(magic, "", "f").status().message().find("wrong magic"), std::string::npos);
  std::string version = bytes;
  version[8] = 9;
  EXPECT_NE(DecodeBundle(version, "", "f").status().message().find("format version 9"), std::string::npos);
  EXPECT_FALSE(DecodeBundle("", "", "f").ok());
}

TEST(BundleFileTest, SignatureRules) {
  const std::string signed_bytes = EncodeBundle(Sample(), kKey);
  const std::string unsigned_bytes = EncodeBundle(Sample(), "");
  absl::Status no_key = DecodeBundle(signed_bytes, "", "s.ssb").status();
  EXPECT_TRUE(absl::IsPermissionDenied(no_key)) << no_key;
  EXPECT_NE(no_key.message().find("--sign-key-file"), std::string::npos);
  absl::Status wrong_key = DecodeBundle(signed_bytes, "another-key-of-some-length", "s.ssb").status();
  EXPECT_TRUE(absl::IsPermissionDenied(wrong_key)) << wrong_key;
  EXPECT_NE(wrong_key.message().find("bad signature"), std::string::npos);
  absl::Status not_signed = DecodeBundle(unsigned_bytes, kKey, "u.ssb").status();
  EXPECT_TRUE(absl::IsPermissionDenied(not_signed)) << not_signed;
  EXPECT_NE(not_signed.message().find("not signed"), std::string::npos);
}

TEST(BundleFileTest, HostileRecordLengthsAreRefusedWithoutAllocating) {
  BundleContents c = Sample();
  std::string bytes = EncodeBundle(c, "");
  // The first record's namespace length becomes 2^32-1, and the checksum is
  // recomputed the way a forger would: the record parser must refuse it by
  // comparing the length with what is left, not by trying to copy it.
  const size_t record = kBundlePreambleSize + 8 + c.header.dump().size();
  for (int i = 0; i < 4; ++i) bytes[record + i] = static_cast<char>(0xff);
  const std::string checksum = persist::Sha256(absl::string_view(bytes).substr(kBundlePreambleSize));
  bytes.replace(24, checksum.size(), checksum);
  absl::Status s = DecodeBundle(bytes, "", "h.ssb").status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("record 0 runs past the end"), std::string::npos) << s;
}

}  // namespace
}  // namespace shapeshift::runtime::bundle
