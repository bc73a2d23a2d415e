// The on-disk format of one persistent-cache entry, separate from the
// directory logic so that the checks that keep a damaged file from ever
// being loaded are in one small place.
//
//   offset  size  field
//        0     8  magic "SSHIFTAC"
//        8     4  format version (little-endian u32)
//       12     4  key length K (u32, at most kMaxArtifactKeyLength)
//       16     8  payload length P (u64)
//       24     8  checksum: 64-bit FNV-1a over the key and payload bytes
//       32     K  key (the entry's own name, so a misfiled copy is caught)
//     32+K     P  payload
//
// The file is exactly 32 + K + P bytes. Lengths are validated against the
// file's size before anything is allocated from them, so a hostile length
// field costs nothing. FNV-1a is not cryptographic: it catches truncation,
// bit rot and torn writes, not a deliberate forger (who could as well write
// a valid file); the cache directory is trusted like the binary itself.
// (zlib's CRC32 is not a dependency of this project and absl 20220623 has
// no CRC, hence FNV-1a, which detects every single-byte change.)
#ifndef SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_FILE_H_
#define SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shapeshift::runtime::persist {

inline constexpr uint32_t kArtifactFormatVersion = 1;
inline constexpr uint64_t kArtifactHeaderSize = 32;
inline constexpr uint32_t kMaxArtifactKeyLength = 128;

struct ArtifactHeader {
  uint32_t key_length = 0;
  uint64_t payload_length = 0;
  uint64_t checksum = 0;
};

std::string EncodeArtifactFile(absl::string_view key, absl::string_view payload);

// Checks magic, version and that the lengths account for exactly
// `file_size` bytes with a payload of at most `max_payload_bytes`.
// `header` is the file's first kArtifactHeaderSize bytes (or fewer, if the
// file is shorter: that is reported as truncation).
absl::StatusOr<ArtifactHeader> ParseArtifactHeader(absl::string_view header, uint64_t file_size,
                                                   uint64_t max_payload_bytes);

uint64_t ArtifactChecksum(absl::string_view key, absl::string_view payload);

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_FILE_H_
