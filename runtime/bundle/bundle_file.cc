#include "runtime/bundle/bundle_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "runtime/persist/signing.h"

namespace shapeshift::runtime::bundle {
namespace {

constexpr absl::string_view kMagic("SSBUNDLE");
constexpr uint32_t kSignedFlag = 1;

void Append(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads a little-endian integer of `bytes` bytes at *offset, advancing it;
// false when the input is too short.
bool Read(absl::string_view in, size_t* offset, int bytes, uint64_t* v) {
  if (*offset > in.size() || in.size() - *offset < static_cast<size_t>(bytes)) return false;
  *v = 0;
  for (int i = 0; i < bytes; ++i) *v |= static_cast<uint64_t>(static_cast<unsigned char>(in[*offset + i])) << (8 * i);
  *offset += bytes;
  return true;
}

// A length-prefixed field; the length is checked against what is left
// before anything is copied.
bool ReadField(absl::string_view in, size_t* offset, int length_bytes, std::string* field) {
  uint64_t n = 0;
  if (!Read(in, offset, length_bytes, &n) || n > in.size() - *offset) return false;
  field->assign(in.data() + *offset, n);
  *offset += n;
  return true;
}

}  // namespace

std::string EncodeBundle(const BundleContents& contents, absl::string_view signing_key) {
  std::string body;
  const std::string header = contents.header.dump();
  Append(header.size(), 8, &body);
  body += header;
  for (const BundleRecord& r : contents.records) {
    Append(r.ns.size(), 4, &body);
    body += r.ns;
    Append(r.key.size(), 4, &body);
    body += r.key;
    Append(r.payload.size(), 8, &body);
    body += r.payload;
  }
  std::string out(kMagic);
  out.reserve(kBundlePreambleSize + body.size());
  Append(kBundleFormatVersion, 4, &out);
  Append(signing_key.empty() ? 0 : kSignedFlag, 4, &out);
  Append(body.size(), 8, &out);
  out += persist::Sha256(body);
  out += signing_key.empty() ? std::string(persist::kSha256Bytes, '\0') : persist::HmacSha256(signing_key, body);
  out += body;
  return out;
}

absl::StatusOr<BundleContents> DecodeBundle(absl::string_view bytes, absl::string_view signing_key,
                                            absl::string_view what) {
  auto damaged = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": ", why));
  };
  if (bytes.size() < kBundlePreambleSize) {
    return damaged(absl::StrCat("truncated: ", bytes.size(), " bytes, shorter than the ", kBundlePreambleSize,
                                "-byte preamble"));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) return damaged("wrong magic: not a shapeshift bundle");
  size_t offset = kMagic.size();
  uint64_t version = 0, flags = 0, body_length = 0;
  Read(bytes, &offset, 4, &version);
  Read(bytes, &offset, 4, &flags);
  Read(bytes, &offset, 8, &body_length);
  if (version != kBundleFormatVersion) {
    return damaged(absl::StrCat("format version ", version, ", this build reads version ", kBundleFormatVersion));
  }
  if ((flags & ~uint64_t{kSignedFlag}) != 0) {
    return damaged(absl::StrCat("unknown flags 0x", absl::Hex(flags), " (this build knows only 0x1, signed)"));
  }
  if (body_length != bytes.size() - kBundlePreambleSize) {
    return damaged(absl::StrCat("the body length (", body_length, ") does not match the file's ", bytes.size(),
                                " bytes (truncated or extended)"));
  }
  const absl::string_view checksum = bytes.substr(24, persist::kSha256Bytes);
  const absl::string_view mac = bytes.substr(56, persist::kSha256Bytes);
  const absl::string_view body = bytes.substr(kBundlePreambleSize);
  if (!persist::DigestsEqual(persist::Sha256(body), checksum)) {
    return damaged("checksum mismatch (SHA-256 of the body): the file was altered or corrupted");
  }
  const bool is_signed = (flags & kSignedFlag) != 0;
  if (is_signed && signing_key.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "bundle ", what, " is signed: pass its key (--sign-key-file) so the signature can be verified"));
  }
  if (!is_signed && !signing_key.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("bundle ", what, " is not signed, but a signing key was given: refused"));
  }
  if (is_signed && !persist::DigestsEqual(persist::HmacSha256(signing_key, body), mac)) {
    return absl::PermissionDeniedError(
        absl::StrCat("bundle ", what, ": bad signature (HMAC-SHA-256): signed with another key, or altered"));
  }
  BundleContents contents;
  contents.signed_ = is_signed;
  size_t at = 0;
  std::string header;
  if (!ReadField(body, &at, 8, &header)) return damaged("the header length runs past the end");
  contents.header = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (contents.header.is_discarded() || !contents.header.is_object()) return damaged("the header is not a JSON object");
  while (at < body.size()) {
    BundleRecord r;
    if (!ReadField(body, &at, 4, &r.ns) || !ReadField(body, &at, 4, &r.key) || !ReadField(body, &at, 8, &r.payload)) {
      return damaged(absl::StrCat("record ", contents.records.size(), " runs past the end"));
    }
    contents.records.push_back(std::move(r));
  }
  return contents;
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("'", path, "': cannot be opened: ", std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("'", path, "': read failed"));
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes) {
  static std::atomic<uint64_t> next{0};
  const std::string temp = absl::StrCat(path, ".tmp.", getpid(), ".", next++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::UnavailableError(absl::StrCat("'", temp, "': cannot be created: ", std::strerror(errno)));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      unlink(temp.c_str());
      return absl::UnavailableError(absl::StrCat("'", path, "': write failed"));
    }
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return absl::UnavailableError(absl::StrCat("'", path, "': cannot be written: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::runtime::bundle
