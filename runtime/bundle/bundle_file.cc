#include "runtime/bundle/bundle_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "base/file_descriptor.h"
#include "runtime/persist/signing.h"

namespace shapeshift::runtime::bundle {
namespace {

constexpr absl::string_view kMagic("SSBUNDLE");
constexpr uint32_t kSignedFlag = 1;
// Files are hashed and copied in pieces of this size.
constexpr uint64_t kPiece = uint64_t{8} << 20;

void Append(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t LittleEndian(absl::string_view in) {
  uint64_t v = 0;
  for (size_t i = 0; i < in.size(); ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

std::string Preamble(uint64_t body_length, absl::string_view checksum, absl::string_view mac, bool is_signed) {
  std::string out(kMagic);
  Append(kBundleFormatVersion, 4, &out);
  Append(is_signed ? kSignedFlag : 0, 4, &out);
  Append(body_length, 8, &out);
  out.append(checksum.data(), checksum.size());
  out += is_signed ? std::string(mac) : std::string(persist::kSha256Bytes, '\0');
  return out;
}

absl::Status PreadAll(int fd, uint64_t offset, uint64_t n, char* out, absl::string_view what) {
  if (PreadFully(fd, out, n, static_cast<int64_t>(offset))) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(what, ": reading ", n, " bytes at byte ", offset, " failed: ",
                                          errno != 0 ? std::strerror(errno) : "the file is shorter than it was"));
}

// The body, piece by piece, to `sink`; a payload in a file is read from it
// in pieces of kPiece.
absl::Status WriteBody(const BundleContents& contents, absl::FunctionRef<absl::Status(absl::string_view)> sink) {
  std::string fields;
  const std::string header = contents.header.dump();
  Append(header.size(), 8, &fields);
  fields += header;
  for (const BundleRecord& r : contents.records) {
    Append(r.ns.size(), 4, &fields);
    fields += r.ns;
    Append(r.key.size(), 4, &fields);
    fields += r.key;
    Append(r.in_file.has_value() ? r.in_file->size : r.payload.size(), 8, &fields);
    if (!r.in_file.has_value()) {
      fields += r.payload;
      continue;
    }
    if (absl::Status s = sink(fields); !s.ok()) return s;
    fields.clear();
    std::string piece;
    for (uint64_t done = 0; done < r.in_file->size; done += piece.size()) {
      piece.resize(std::min(kPiece, r.in_file->size - done));
      const std::string what = absl::StrCat("the ", r.ns, "/", r.key, " record's source file");
      if (absl::Status s = PreadAll(r.in_file->fd, r.in_file->offset + done, piece.size(), piece.data(), what);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = sink(piece); !s.ok()) return s;
    }
  }
  return sink(fields);
}

// Where a reader's bytes come from: a string, or a file read with pread.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Exactly `n` bytes at `offset`; the caller checked that they exist.
  virtual absl::Status Read(uint64_t offset, uint64_t n, std::string* out) const = 0;
};

class StringSource : public ByteSource {
 public:
  explicit StringSource(absl::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  absl::Status Read(uint64_t offset, uint64_t n, std::string* out) const override {
    out->assign(bytes_.data() + offset, n);
    return absl::OkStatus();
  }

 private:
  absl::string_view bytes_;
};

class FileSource : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, std::string what) : fd_(fd), size_(size), what_(std::move(what)) {}
  uint64_t size() const override { return size_; }
  absl::Status Read(uint64_t offset, uint64_t n, std::string* out) const override {
    out->resize(n);
    return PreadAll(fd_, offset, n, out->data(), what_);
  }

 private:
  int fd_;
  uint64_t size_;
  std::string what_;
};

FileIdentity IdentityFromStat(const struct stat& st) {
  return FileIdentity{st.st_dev, st.st_ino, static_cast<uint64_t>(st.st_size),
                      st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
}

absl::StatusOr<BundleContents> Decode(const ByteSource& in, absl::string_view signing_key, absl::string_view what,
                                      absl::string_view keep_in_file) {
  auto damaged = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": ", why));
  };
  if (in.size() < kBundlePreambleSize) {
    return damaged(absl::StrCat("truncated: ", in.size(), " bytes, shorter than the ", kBundlePreambleSize,
                                "-byte preamble"));
  }
  std::string preamble;
  if (absl::Status s = in.Read(0, kBundlePreambleSize, &preamble); !s.ok()) return s;
  const absl::string_view p(preamble);
  if (p.substr(0, kMagic.size()) != kMagic) return damaged("wrong magic: not a shapeshift bundle");
  const uint64_t version = LittleEndian(p.substr(8, 4)), flags = LittleEndian(p.substr(12, 4));
  const uint64_t body_length = LittleEndian(p.substr(16, 8));
  if (version != kBundleFormatVersion) {
    return damaged(absl::StrCat("format version ", version, ", this build reads version ", kBundleFormatVersion));
  }
  if ((flags & ~uint64_t{kSignedFlag}) != 0) {
    return damaged(absl::StrCat("unknown flags 0x", absl::Hex(flags), " (this build knows only 0x1, signed)"));
  }
  if (body_length != in.size() - kBundlePreambleSize) {
    return damaged(absl::StrCat("the body length (", body_length, ") does not match the file's ", in.size(),
                                " bytes (truncated or extended)"));
  }
  const bool is_signed = (flags & kSignedFlag) != 0;
  persist::Sha256Stream sha;
  persist::HmacSha256Stream mac(is_signed ? signing_key : "");
  std::string piece;
  for (uint64_t at = kBundlePreambleSize; at < in.size(); at += piece.size()) {
    if (absl::Status s = in.Read(at, std::min(kPiece, in.size() - at), &piece); !s.ok()) return s;
    sha.Update(piece);
    mac.Update(piece);
  }
  std::string().swap(piece);
  if (!persist::DigestsEqual(sha.Finish(), p.substr(24, persist::kSha256Bytes))) {
    return damaged("checksum mismatch (SHA-256 of the body): the file was altered or corrupted");
  }
  if (is_signed && signing_key.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "bundle ", what, " is signed: pass its key (--sign-key-file) so the signature can be verified"));
  }
  if (!is_signed && !signing_key.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("bundle ", what, " is not signed, but a signing key was given: refused"));
  }
  if (is_signed && !persist::DigestsEqual(mac.Finish(), p.substr(56, persist::kSha256Bytes))) {
    return absl::PermissionDeniedError(
        absl::StrCat("bundle ", what, ": bad signature (HMAC-SHA-256): signed with another key, or altered"));
  }

  // A length-prefixed field at `*at`; the length is checked against what is
  // left before anything is read or allocated. `located` (may be null)
  // takes the field's place instead of its bytes.
  uint64_t at = kBundlePreambleSize;
  auto field = [&](int length_bytes, std::string* out, std::optional<PayloadInFile>* located) -> bool {
    std::string length;
    if (in.size() - at < static_cast<uint64_t>(length_bytes) || !in.Read(at, length_bytes, &length).ok()) return false;
    at += length_bytes;
    const uint64_t n = LittleEndian(length);
    if (n > in.size() - at) return false;
    if (located != nullptr) {
      *located = PayloadInFile{-1, at, n};
    } else if (!in.Read(at, n, out).ok()) {
      return false;
    }
    at += n;
    return true;
  };
  BundleContents contents;
  contents.signed_ = is_signed;
  std::string header;
  if (!field(8, &header, nullptr)) return damaged("the header length runs past the end");
  contents.header = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (contents.header.is_discarded() || !contents.header.is_object()) return damaged("the header is not a JSON object");
  while (at < in.size()) {
    BundleRecord r;
    if (!field(4, &r.ns, nullptr) || !field(4, &r.key, nullptr) ||
        !field(8, &r.payload, !keep_in_file.empty() && r.ns == keep_in_file ? &r.in_file : nullptr)) {
      return damaged(absl::StrCat("record ", contents.records.size(), " runs past the end"));
    }
    contents.records.push_back(std::move(r));
  }
  return contents;
}

}  // namespace

absl::StatusOr<std::string> EncodeBundle(const BundleContents& contents, absl::string_view signing_key) {
  std::string body;
  absl::Status written = WriteBody(contents, [&](absl::string_view piece) {
    body.append(piece.data(), piece.size());
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  const bool is_signed = !signing_key.empty();
  std::string out =
      Preamble(body.size(), persist::Sha256(body), is_signed ? persist::HmacSha256(signing_key, body) : "", is_signed);
  out += body;
  return out;
}

absl::Status WriteBundleFile(const std::string& path, const BundleContents& contents, absl::string_view signing_key) {
  static std::atomic<uint64_t> next{0};
  const std::string temp = absl::StrCat(path, ".tmp.", getpid(), ".", next++);
  FileDescriptor fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return absl::UnavailableError(absl::StrCat("'", temp, "': cannot be created: ", std::strerror(errno)));
  const bool is_signed = !signing_key.empty();
  persist::Sha256Stream sha;
  persist::HmacSha256Stream mac(signing_key);
  auto failed = [&] { return absl::UnavailableError(absl::StrCat("'", path, "': write failed: ", std::strerror(errno))); };
  // The body after room for the preamble, which is written last (it holds the body's digests).
  uint64_t body_length = 0;
  absl::Status s = WriteBody(contents, [&](absl::string_view piece) {
    sha.Update(piece);
    mac.Update(piece);
    const bool written =
        PwriteFully(fd.get(), piece.data(), piece.size(), static_cast<int64_t>(kBundlePreambleSize + body_length));
    body_length += piece.size();
    return written ? absl::OkStatus() : failed();
  });
  if (s.ok()) {
    const std::string preamble = Preamble(body_length, sha.Finish(), mac.Finish(), is_signed);
    if (!PwriteFully(fd.get(), preamble.data(), preamble.size(), 0)) s = failed();
  }
  if (s.ok() && fd.Close() != 0) {
    s = absl::UnavailableError(absl::StrCat("'", path, "': write failed: ", std::strerror(errno)));
  }
  if (s.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    s = absl::UnavailableError(absl::StrCat("'", path, "': cannot be written: ", std::strerror(errno)));
  }
  if (!s.ok()) unlink(temp.c_str());
  return s;
}

absl::StatusOr<BundleContents> DecodeBundle(absl::string_view bytes, absl::string_view signing_key,
                                            absl::string_view what) {
  return Decode(StringSource(bytes), signing_key, what, "");
}

absl::StatusOr<BundleContents> ReadBundleFile(const std::string& path, absl::string_view signing_key,
                                              absl::string_view keep_in_file) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || fstat(fd.get(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("bundle '", path, "': cannot be opened: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat("bundle '", path, "': not a regular file"));
  absl::StatusOr<BundleContents> contents =
      Decode(FileSource(fd.get(), static_cast<uint64_t>(st.st_size), absl::StrCat("bundle ", path)), signing_key,
             path, keep_in_file);
  if (contents.ok()) contents->file = IdentityFromStat(st);
  return contents;
}

absl::StatusOr<FileIdentity> IdentityOf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("'", path, "': cannot be read: ", std::strerror(errno)));
  }
  return IdentityFromStat(st);
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
