#include "runtime/persist/artifact_file.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime::persist {
namespace {

constexpr absl::string_view kMagic("SSHIFTAC");

void AppendLittleEndian(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t ReadLittleEndian(absl::string_view bytes, size_t offset, int size) {
  uint64_t v = 0;
  for (int i = 0; i < size; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

void FnvUpdate(absl::string_view bytes, uint64_t* hash) {
  for (char c : bytes) {
    *hash ^= static_cast<unsigned char>(c);
    *hash *= 0x100000001b3ull;
  }
}

}  // namespace

uint64_t ArtifactChecksum(absl::string_view key, absl::string_view payload) {
  uint64_t hash = 0xcbf29ce484222325ull;
  FnvUpdate(key, &hash);
  FnvUpdate(payload, &hash);
  return hash;
}

std::string EncodeArtifactFile(absl::string_view key, absl::string_view payload) {
  std::string out(kMagic);
  out.reserve(kArtifactHeaderSize + key.size() + payload.size());
  AppendLittleEndian(kArtifactFormatVersion, 4, &out);
  AppendLittleEndian(key.size(), 4, &out);
  AppendLittleEndian(payload.size(), 8, &out);
  AppendLittleEndian(ArtifactChecksum(key, payload), 8, &out);
  absl::StrAppend(&out, key, payload);
  return out;
}

absl::StatusOr<ArtifactHeader> ParseArtifactHeader(absl::string_view header, uint64_t file_size,
                                                   uint64_t max_payload_bytes) {
  if (header.size() < kArtifactHeaderSize || file_size < kArtifactHeaderSize) {
    return absl::DataLossError(absl::StrCat("truncated: ", file_size, " bytes, shorter than the ",
                                            kArtifactHeaderSize, "-byte header"));
  }
  if (header.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("wrong magic: not a shapeshift cache file");
  }
  uint64_t version = ReadLittleEndian(header, 8, 4);
  if (version != kArtifactFormatVersion) {
    return absl::DataLossError(
        absl::StrCat("format version ", version, ", this build reads version ", kArtifactFormatVersion));
  }
  ArtifactHeader parsed;
  parsed.key_length = static_cast<uint32_t>(ReadLittleEndian(header, 12, 4));
  parsed.payload_length = ReadLittleEndian(header, 16, 8);
  parsed.checksum = ReadLittleEndian(header, 24, 8);
  if (parsed.key_length > kMaxArtifactKeyLength) {
    return absl::DataLossError(absl::StrCat("key length ", parsed.key_length, " exceeds ", kMaxArtifactKeyLength));
  }
  if (parsed.payload_length > max_payload_bytes) {
    return absl::DataLossError(
        absl::StrCat("payload length ", parsed.payload_length, " exceeds the limit of ", max_payload_bytes, " bytes"));
  }
  uint64_t after_header = file_size - kArtifactHeaderSize;  // file_size >= the header, checked above
  if (parsed.key_length > after_header || parsed.payload_length != after_header - parsed.key_length) {
    return absl::DataLossError(absl::StrCat("the header's lengths (key ", parsed.key_length, ", payload ",
                                            parsed.payload_length, ") do not match the file's ", file_size, " bytes"));
  }
  return parsed;
}

}  // namespace shapeshift::runtime::persist
