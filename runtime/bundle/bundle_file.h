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
// "model"/"onnx" (the model, as ONNX bytes with its declared ranges; its
// initializers' bytes are external data in the weights record),
// "weights"/"initializers" (those bytes, each at the offset its initializer
// names, relative to the start of this payload),
// "manifests"/<manifest key> (the entries: tier, trigger, buckets, guards) and
// "objects"/<digest> (each kernel's object record, with its key material).
// Plans and oneDNN primitives are not stored: loading re-runs the passes on
// the embedded model and links each kernel from its record (no LLVM work),
// which is how the persistent cache re-creates entries too (manifest.h).
//
// Why the weights are a record of their own: the model message then stays
// small whatever the model weighs (protobuf refuses a message of 2 GiB), and
// a reader can leave them in the file (ReadBundleFile's `keep_in_file`): the
// importer reads them from there like any model's external data.
//
// Reading checks, in order, before anything is parsed or allocated from a
// length: magic, version, the lengths against the file size, the SHA-256
// (any changed byte: "checksum mismatch"), then the signature: a reader with
// a key refuses an unsigned or badly signed bundle, a reader without one
// refuses a signed bundle (it cannot verify what the writer wanted verified).
// A file is read and hashed in pieces, never whole in memory.
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

inline constexpr uint32_t kBundleFormatVersion = 2;
inline constexpr uint64_t kBundlePreambleSize = 88;

inline constexpr absl::string_view kModelNamespace = "model";
inline constexpr absl::string_view kModelKey = "onnx";
inline constexpr absl::string_view kWeightsNamespace = "weights";
inline constexpr absl::string_view kWeightsKey = "initializers";

// A payload that stays in a file: `size` bytes at `offset`. Written from
// `fd` (a writer's source); read by ReadBundleFile, `offset` is where the
// payload lies in the bundle file and `fd` is -1.
struct PayloadInFile {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct BundleRecord {
  std::string ns;
  std::string key;
  std::string payload;
  std::optional<PayloadInFile> in_file;  // set: the payload is there, not in `payload`
};

// Which file was read (a reader compares it again after using the file's
// bytes by path: a bundle replaced meanwhile is refused, never mixed).
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t modified_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};
absl::StatusOr<FileIdentity> IdentityOf(const std::string& path);

struct BundleContents {
  // The header JSON: target, policy, domain, manifest key, certificate
  // (bundle.h gives it a type; the file layer only keeps it intact).
  nlohmann::json header;
  std::vector<BundleRecord> records;
  bool signed_ = false;
  std::optional<FileIdentity> file;  // ReadBundleFile's
};

// The file's bytes; signed with HMAC-SHA-256 when `signing_key` is non-empty.
// Payloads in files are read into the result (an error names a failed read).
absl::StatusOr<std::string> EncodeBundle(const BundleContents& contents, absl::string_view signing_key);
// The same bytes streamed to `path` (atomically: a temporary file renamed),
// payloads in files copied piece by piece: nothing is held whole in memory.
absl::Status WriteBundleFile(const std::string& path, const BundleContents& contents,
                             absl::string_view signing_key);

// The contents, after every check at the top of this file. `signing_key`:
// empty = the reader has none. Errors say what failed (DataLoss for damage,
// PermissionDenied for a signature problem, naming `what`, e.g. the path).
absl::StatusOr<BundleContents> DecodeBundle(absl::string_view bytes, absl::string_view signing_key,
                                            absl::string_view what);
// The same checks on the file at `path`, read in pieces; the payloads of
// records in `keep_in_file` are not read but located (BundleRecord::in_file).
absl::StatusOr<BundleContents> ReadBundleFile(const std::string& path, absl::string_view signing_key,
                                              absl::string_view keep_in_file);

absl::StatusOr<std::string> ReadFileBytes(const std::string& path);
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

}  // namespace shapeshift::runtime::bundle

#endif  // SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_FILE_H_
