// ArtifactObjectStore: CpuBackend's ObjectStore on top of an EntryStore
// (namespace "objects": the persistent ArtifactCache, a bundle, a remote
// cache or a chain of them), so compiled kernels survive the process. The backend's record already carries the full key material; the
// cache adds the checksum and atomic replacement.
//
// A cache read error is reported by the cache (its stats and warning
// stream) and answered as a miss: the kernel is compiled as if the cache
// were empty.
#ifndef SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_OBJECT_STORE_H_
#define SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_OBJECT_STORE_H_

#include <optional>
#include <string>

#include "codegen/cpu/object_store.h"
#include "runtime/persist/artifact_cache.h"

namespace shapeshift::runtime::persist {

inline constexpr absl::string_view kObjectNamespace = "objects";

class ArtifactObjectStore : public codegen::cpu::ObjectStore {
 public:
  // `cache` is not owned and must outlive this store.
  explicit ArtifactObjectStore(EntryStore* cache) : cache_(cache) {}

  std::optional<std::string> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, absl::string_view bytes) override;

 private:
  EntryStore* cache_;
};

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_OBJECT_STORE_H_
