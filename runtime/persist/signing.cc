#include "runtime/persist/signing.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shapeshift::runtime::persist {

std::string Sha256(absl::string_view bytes) {
  std::string out(kSha256Bytes, '\0');
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(out.data()), &length, EVP_sha256(),
             nullptr);
  out.resize(length);
  return out;
}

std::string HmacSha256(absl::string_view key, absl::string_view bytes) {
  std::string out(kSha256Bytes, '\0');
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(bytes.data()),
       bytes.size(), reinterpret_cast<unsigned char*>(out.data()), &length);
  out.resize(length);
  return out;
}

bool DigestsEqual(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<std::string> ReadSigningKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("signing key file '", path, "': cannot be read"));
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("signing key file '", path, "': read failed"));
  key = std::string(absl::StripTrailingAsciiWhitespace(key));
  if (key.size() < kMinSigningKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("signing key file '", path, "': ", key.size(),
                                                   " bytes, at least ", kMinSigningKeyBytes,
                                                   " are needed (e.g. `openssl rand -hex 32 > KEY`)"));
  }
  return key;
}

}  // namespace shapeshift::runtime::persist
