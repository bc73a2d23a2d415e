// The bundle file format (runtime/bundle/bundle_file.h): a round trip, and
// every kind of damage refused before anything is parsed from it — truncated,
// extended, a flipped byte anywhere (checksum), wrong magic or version, and
// the signature rules (a key refuses unsigned or differently signed files; a
// signed file needs the key).
#include "runtime/bundle/bundle_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "base/file_descriptor.h"
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
    const std::string bytes = EncodeBundle(Sample(), key).value();
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
  const std::string bytes = EncodeBundle(Sample(), kKey).value();
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
  const std::string bytes = EncodeBundle(Sample(), "").value();
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
  const std::string signed_bytes = EncodeBundle(Sample(), kKey).value();
  const std::string unsigned_bytes = EncodeBundle(Sample(), "").value();
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
  std::string bytes = EncodeBundle(c, "").value();
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

// A payload kept in a file (a bundle's weights) is streamed into the bundle
// from an offset of its source, across more than one of the writer's 8 MiB
// pieces; read back with ReadBundleFile it is located, not read, at the place
// where DecodeBundle finds the same bytes; the file checks are the same.
TEST(BundleFileTest, APayloadInAFileIsStreamedInAndLocatedOnTheWayOut) {
  const std::string source_path = ::testing::TempDir() + "/bundle_file_test_source";
  std::string source(size_t{9} << 20, '\0');
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>((i * 131) >> 7);
  std::ofstream(source_path, std::ios::binary) << source;
  FileDescriptor fd(open(source_path.c_str(), O_RDONLY));
  ASSERT_GE(fd.get(), 0);
  const std::string expected = source.substr(7);
  BundleContents c = Sample();
  c.records.insert(c.records.begin() + 1, BundleRecord{"weights", "initializers", "", PayloadInFile{fd.get(), 7, expected.size()}});
  const std::string path = ::testing::TempDir() + "/bundle_file_test_streamed.ssb";
  for (const std::string& key : {std::string(), std::string(kKey)}) {
    SCOPED_TRACE(key.empty() ? "unsigned" : "signed");
    ASSERT_TRUE(WriteBundleFile(path, c, key).ok());
    const std::string bytes = ReadFileBytes(path).value();
    absl::StatusOr<BundleContents> decoded = DecodeBundle(bytes, key, path);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(decoded->records.size(), 3u);
    EXPECT_TRUE(decoded->records[1].payload == expected);
    absl::StatusOr<BundleContents> read = ReadBundleFile(path, key, "weights");
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->records.size(), 3u);
    ASSERT_TRUE(read->records[1].in_file.has_value());
    EXPECT_TRUE(read->records[1].payload.empty());
    EXPECT_EQ(read->records[1].in_file->size, expected.size());
    EXPECT_TRUE(bytes.substr(read->records[1].in_file->offset, expected.size()) == expected);
    EXPECT_EQ(read->records[0].payload, c.records[0].payload);
    EXPECT_EQ(read->records[2].payload, c.records[2].payload);
    EXPECT_EQ(read->header, c.header);
    EXPECT_EQ(read->signed_, !key.empty());
    ASSERT_TRUE(read->file.has_value());
    EXPECT_TRUE(*read->file == IdentityOf(path).value());
  }
  // One flipped byte deep in the located payload is still a checksum mismatch.
  {
    const uint64_t start = ReadBundleFile(path, kKey, "weights").value().records[1].in_file->offset;
    const uint64_t at = size_t{8} << 20;  // past the writer's first piece
    const char flipped = static_cast<char>(~expected[at]);
    FileDescriptor w(open(path.c_str(), O_WRONLY));
    ASSERT_EQ(pwrite(w.get(), &flipped, 1, static_cast<off_t>(start + at)), 1);
  }
  absl::Status flipped = ReadBundleFile(path, kKey, "weights").status();
  EXPECT_TRUE(absl::IsDataLoss(flipped)) << flipped;
  EXPECT_NE(flipped.message().find("checksum mismatch"), std::string::npos) << flipped;
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  EXPECT_NE(ReadBundleFile(path, kKey, "weights").status().message().find("does not match"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(ReadBundleFile(path + ".missing", "", "weights").status()));
}

}  // namespace
}  // namespace shapeshift::runtime::bundle
