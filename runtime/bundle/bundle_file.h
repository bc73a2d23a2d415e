// The bytes of an AOT bundle (`shapeshift compile ... -o MODEL.ssb`): the one
// description of the format (runtime/bundle/README.md points here).
//
//   offset  size  field
//        0     8  magic "SSBUNDLE"
//        8     4  format version (little-endian u32)
//       12     4  flags (u32): bit 0 = signed; any other bit set is refused
//       16     8  body length B (u64)
//       24    32  SHA-256 of the body (the checksum)
//       56    32  HMAC-SHA-256 of the body with the signing key (zeros when unsigned)
//       88     B  body:
//                   u64 H, then H bytes of header JSON (BundleHeader below)
//                   then records until the end of the body, each:
//                     u32 namespace length, namespace, u32 key length, key,
//                     u64 payload length, payload
//
// The file is exactly 88 + B bytes. Records hold what the Dispatcher's stores
// hold, under the same namespaces and keys (runtime/persist/entry_store.h):
// "model"/"onnx" (the model, as ONNX bytes with its declared ranges),
// "manifests"/<manifest key> (the entries: tier, trigger, buckets, guards) and
// "objects"/<digest> (each kernel's object record, with its key material).
// Plans and oneDNN primitives are not stored: loading re-runs the passes on
// the embedded model and links each kernel from its record (no LLVM work),
// which is how the persistent cache re-creates entries too (manifest.h).
//
// Reading checks, in order, before anything is parsed or allocated from a
// length: magic, version, the lengths against the file size, the SHA-256
// (any changed byte: "checksum mismatch"), then the signature: a reader with
// a key refuses an unsigned or badly signed bundle, a reader without one
// refuses a signed bundle (it cannot verify what the writer wanted verified).
#ifndef SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_FILE_H_
#define SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace shapeshift::runtime::bundle {

inline constexpr uint32_t kBundleFormatVersion = 1;
inline constexpr uint64_t kBundlePreambleSize = 88;

inline constexpr absl::string_view kModelNamespace = "model";
inline constexpr absl::string_view kModelKey = "onnx";

struct BundleRecord {
  std::string ns;
  std::string key;
  std::string payload;
};

struct BundleContents {
  // The header JSON: target, policy, domain, manifest key, certificate
  // (bundle.h gives it a type; the file layer only keeps it intact).
  nlohmann::json header;
  std::vector<BundleRecord> records;
  bool signed_ = false;
};

// The file's bytes; signed with HMAC-SHA-256 when `signing_key` is non-empty.
std::string EncodeBundle(const BundleContents& contents, absl::string_view signing_key);

// The contents, after every check at the top of this file. `signing_key`:
// empty = the reader has none. Errors say what failed (DataLoss for damage,
// PermissionDenied for a signature problem, naming `what`, e.g. the path).
absl::StatusOr<BundleContents> DecodeBundle(absl::string_view bytes, absl::string_view signing_key,
                                            absl::string_view what);

absl::StatusOr<std::string> ReadFileBytes(const std::string& path);
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

}  // namespace shapeshift::runtime::bundle

#endif  // SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_FILE_H_
