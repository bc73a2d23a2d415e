// SHA-256 and HMAC-SHA-256 from OpenSSL's libcrypto, and the shared keys
// that sign bundles and remote-cache entries.
//
// Why a crypto library and not the cache's FNV-1a: the local cache's
// checksum catches accidents in a directory trusted like the binary. A
// bundle travels between machines and a Redis server is shared by every
// replica that can reach it, so whoever can write them could otherwise hand
// a process machine code to run. A keyed MAC (HMAC-SHA-256) is what lets a
// reader refuse bytes written by anyone without the key; SHA-256 is the
// bundle's checksum. Both come from libcrypto (libssl-dev), never a
// hand-written hash.
#ifndef SHAPESHIFT_RUNTIME_PERSIST_SIGNING_H_
#define SHAPESHIFT_RUNTIME_PERSIST_SIGNING_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shapeshift::runtime::persist {

inline constexpr size_t kSha256Bytes = 32;
// Shorter keys are refused: a short shared secret can be guessed offline
// from any signed value.
inline constexpr size_t kMinSigningKeyBytes = 16;

// The 32-byte digests (raw bytes, not hex).
std::string Sha256(absl::string_view bytes);
std::string HmacSha256(absl::string_view key, absl::string_view bytes);
// The same digests over bytes given in pieces (a bundle's body streamed from
// or to its file, never whole in memory). An empty `key` makes a MacStream
// that computes nothing and returns "" (an unsigned bundle's).
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(absl::string_view bytes);
  std::string Finish();

 private:
  struct State;
  State* state_;
};
class HmacSha256Stream {
 public:
  explicit HmacSha256Stream(absl::string_view key);
  ~HmacSha256Stream();
  HmacSha256Stream(const HmacSha256Stream&) = delete;
  HmacSha256Stream& operator=(const HmacSha256Stream&) = delete;
  void Update(absl::string_view bytes);
  std::string Finish();

 private:
  struct State;
  State* state_;
};
// Compares two digests in time independent of where they differ.
bool DigestsEqual(absl::string_view a, absl::string_view b);

// The key in `path`: its bytes with trailing whitespace (a final newline)
// removed. Errors name the file: unreadable, or shorter than
// kMinSigningKeyBytes.
absl::StatusOr<std::string> ReadSigningKeyFile(const std::string& path);

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_SIGNING_H_
