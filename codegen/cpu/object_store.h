// ObjectStore: where CpuBackend keeps the machine code of compiled kernels so
// that a later backend — in this process or the next one — loads it instead
// of lowering, optimizing and generating code again (the O3 pipeline and
// instruction selection are nearly all of a model's compile time).
//
// The store is a plain byte map; what makes reuse safe is the record put in
// it. A key is the SHA-1 digest of the kernel's *key material* (everything
// that decides the generated code: the kernel IR with exact constants, the
// lowering options, host CPU and features, LLVM version and the compiler's
// identity). The record repeats the full key material, and a lookup compares
// it byte for byte, so a digest collision or a record filed under the wrong
// key is a miss, never the wrong kernel.
//
// The compiler's identity is its version *and* a digest of the sources that
// decide the generated code (cmake/SourceIdentity.cmake): the lowering changes
// far more often than the version number, and an object from an older lowering
// must never load; every binary built from one tree (CLI, Python module, tests)
// shares the identity, so their objects and bundles are interchangeable.
#ifndef SHAPESHIFT_CODEGEN_CPU_OBJECT_STORE_H_
#define SHAPESHIFT_CODEGEN_CPU_OBJECT_STORE_H_

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace shapeshift::codegen::cpu {

// Implementations must be thread-safe: several backends may share one.
class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // The bytes last Put under `key`, or nullopt when there are none usable
  // (an implementation that finds a damaged entry reports it its own way
  // and answers nullopt).
  virtual std::optional<std::string> Get(const std::string& key) = 0;
  // An error means the bytes were not kept; the caller compiled fine anyway.
  virtual absl::Status Put(const std::string& key, absl::string_view bytes) = 0;
};

// A store that lives as long as the process: shares compiled objects between
// backends (e.g. the tiers of one model) without touching the disk.
class InMemoryObjectStore : public ObjectStore {
 public:
  std::optional<std::string> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, absl::string_view bytes) override;

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> entries_ ABSL_GUARDED_BY(mu_);
};

// What one store entry holds.
struct ObjectRecord {
  std::string key_material;  // compared exactly on every lookup
  std::string symbol;        // the kernel function; its extent is symbol + "_extent"
  std::string object;        // a relocatable object file for the host
};

std::string EncodeObjectRecord(const ObjectRecord& record);
// Errors describe what is malformed (short, bad lengths); never reads past `bytes`.
absl::StatusOr<ObjectRecord> DecodeObjectRecord(absl::string_view bytes);

// Hex SHA-1 of the key material: stable across processes and machines
// (absl::Hash is seeded per process and must never key anything on disk).
std::string ObjectKeyDigest(absl::string_view key_material);

// "shapeshift <version> source <hex digest of the code generator's sources>".
const std::string& CompilerIdentity();

// "shapeshift <version> gemm engines <hex digest>": the same digest over the
// GEMM engines' and the tuner's sources only (cmake/SourceIdentity.cmake
// lists them). What a GEMM tuning is valid for: an edit elsewhere in the
// compiler leaves this machine's tuning in force.
const std::string& GemmEngineIdentity();

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_OBJECT_STORE_H_
