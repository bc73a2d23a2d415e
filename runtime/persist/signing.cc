#include "runtime/persist/signing.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

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

struct Sha256Stream::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
};

Sha256Stream::Sha256Stream() : state_(new State) { EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr); }
Sha256Stream::~Sha256Stream() {
  EVP_MD_CTX_free(state_->ctx);
  delete state_;
}
void Sha256Stream::Update(absl::string_view bytes) { EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()); }
std::string Sha256Stream::Finish() {
  std::string out(kSha256Bytes, '\0');
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->ctx, reinterpret_cast<unsigned char*>(out.data()), &length);
  out.resize(length);
  return out;
}

struct HmacSha256Stream::State {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
};

HmacSha256Stream::HmacSha256Stream(absl::string_view key) : state_(new State) {
  if (key.empty()) return;
  state_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  state_->ctx = EVP_MAC_CTX_new(state_->mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  EVP_MAC_init(state_->ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params);
}
HmacSha256Stream::~HmacSha256Stream() {
  EVP_MAC_CTX_free(state_->ctx);
  EVP_MAC_free(state_->mac);
  delete state_;
}
void HmacSha256Stream::Update(absl::string_view bytes) {
  if (state_->ctx != nullptr) EVP_MAC_update(state_->ctx, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}
std::string HmacSha256Stream::Finish() {
  if (state_->ctx == nullptr) return "";
  std::string out(kSha256Bytes, '\0');
  size_t length = 0;
  EVP_MAC_final(state_->ctx, reinterpret_cast<unsigned char*>(out.data()), &length, out.size());
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
