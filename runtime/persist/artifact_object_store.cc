#include "runtime/persist/artifact_object_store.h"

namespace shapeshift::runtime::persist {

std::optional<std::string> ArtifactObjectStore::Get(const std::string& key) {
  absl::StatusOr<std::optional<std::string>> bytes = cache_->Get(kObjectNamespace, key);
  if (!bytes.ok()) return std::nullopt;  // counted and reported by the cache
  return *std::move(bytes);
}

absl::Status ArtifactObjectStore::Put(const std::string& key, absl::string_view bytes) {
  return cache_->Put(kObjectNamespace, key, bytes);
}

}  // namespace shapeshift::runtime::persist
