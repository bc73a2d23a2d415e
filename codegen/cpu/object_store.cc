#include "codegen/cpu/object_store.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SHA1.h"
#include "source_identity.h"  // generated: cmake/SourceIdentity.cmake

#ifndef SHAPESHIFT_VERSION
#error "SHAPESHIFT_VERSION must be defined for this file (see the top-level CMakeLists.txt)"
#endif

namespace shapeshift::codegen::cpu {
namespace {

constexpr absl::string_view kRecordMagic("shapeshift-object-record-1\n");

void AppendU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads a little-endian u64 length and that many bytes; advances `in`.
bool ReadField(absl::string_view* in, std::string* field) {
  if (in->size() < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  in->remove_prefix(8);
  if (n > in->size()) return false;  // checked before anything is allocated
  field->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}


}  // namespace

std::optional<std::string> InMemoryObjectStore::Get(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

absl::Status InMemoryObjectStore::Put(const std::string& key, absl::string_view bytes) {
  absl::MutexLock lock(&mu_);
  entries_[key] = std::string(bytes);
  return absl::OkStatus();
}

std::string EncodeObjectRecord(const ObjectRecord& record) {
  std::string out(kRecordMagic);
  for (const std::string* field : {&record.key_material, &record.symbol, &record.object}) {
    AppendU64(field->size(), &out);
    out += *field;
  }
  return out;
}

absl::StatusOr<ObjectRecord> DecodeObjectRecord(absl::string_view bytes) {
  if (bytes.substr(0, kRecordMagic.size()) != kRecordMagic) {
    return absl::DataLossError("object record: missing or wrong magic (not a shapeshift object record)");
  }
  bytes.remove_prefix(kRecordMagic.size());
  ObjectRecord record;
  if (!ReadField(&bytes, &record.key_material) || !ReadField(&bytes, &record.symbol) ||
      !ReadField(&bytes, &record.object)) {
    return absl::DataLossError("object record: truncated or a length runs past the end");
  }
  if (!bytes.empty()) {
    return absl::DataLossError(absl::StrCat("object record: ", bytes.size(), " unexpected bytes after the object"));
  }
  if (record.symbol.empty() || record.object.empty()) {
    return absl::DataLossError("object record: empty symbol or object");
  }
  return record;
}

std::string ObjectKeyDigest(absl::string_view key_material) {
  llvm::SHA1 sha1;
  sha1.update(llvm::StringRef(key_material.data(), key_material.size()));
  auto digest = sha1.final();
  return absl::BytesToHexString(absl::string_view(digest.data(), digest.size()));
}

const std::string& CompilerIdentity() {
  static const std::string* identity =
      new std::string(absl::StrCat("shapeshift ", SHAPESHIFT_VERSION, " source ", SHAPESHIFT_SOURCE_IDENTITY));
  return *identity;
}

const std::string& GemmEngineIdentity() {
  static const std::string* identity =
      new std::string(absl::StrCat("shapeshift ", SHAPESHIFT_VERSION, " gemm engines ", SHAPESHIFT_GEMM_ENGINE_IDENTITY));
  return *identity;
}

}  // namespace shapeshift::codegen::cpu
