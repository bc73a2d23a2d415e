#include "runtime/persist/entry_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift::runtime::persist {

void MemoryEntryStore::Insert(std::string ns, std::string key, std::string payload) {
  absl::MutexLock lock(&mu_);
  entries_[{std::move(ns), std::move(key)}] = std::move(payload);
}

absl::StatusOr<std::optional<std::string>> MemoryEntryStore::Get(absl::string_view ns, absl::string_view key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find({std::string(ns), std::string(key)});
  if (it == entries_.end()) return std::nullopt;
  return std::optional<std::string>(it->second);
}

absl::Status MemoryEntryStore::Put(absl::string_view ns, absl::string_view key, absl::string_view payload) {
  if (read_only_) return absl::FailedPreconditionError(absl::StrCat(Describe(ns, key), ": read-only"));
  Insert(std::string(ns), std::string(key), std::string(payload));
  return absl::OkStatus();
}

std::string MemoryEntryStore::Describe(absl::string_view ns, absl::string_view key) const {
  return absl::StrCat(name_, ":", ns, "/", key);
}

std::map<std::pair<std::string, std::string>, std::string> MemoryEntryStore::Entries() const {
  absl::MutexLock lock(&mu_);
  return entries_;
}

absl::StatusOr<std::optional<std::string>> TieredEntryStore::Get(absl::string_view ns, absl::string_view key) {
  absl::Status first_error = absl::OkStatus();
  for (size_t i = 0; i < layers_.size(); ++i) {
    absl::StatusOr<std::optional<std::string>> got = layers_[i].store->Get(ns, key);
    if (!got.ok()) {
      if (first_error.ok()) first_error = got.status();
      continue;
    }
    if (!got->has_value()) continue;
    for (size_t j = 0; j < i; ++j) {
      // A failed backfill only costs the next process a slower lookup; the
      // layer has counted and reported it.
      if (layers_[j].writable) layers_[j].store->Put(ns, key, **got).IgnoreError();
    }
    return got;
  }
  // Every layer missed; a layer's error is a miss too (it was reported), but
  // a bad name is the caller's bug and every layer says so alike.
  if (!first_error.ok() && absl::IsInvalidArgument(first_error)) return first_error;
  return std::nullopt;
}

absl::Status TieredEntryStore::Put(absl::string_view ns, absl::string_view key, absl::string_view payload) {
  absl::Status first_error = absl::OkStatus();
  bool kept = false;
  for (const Layer& layer : layers_) {
    if (!layer.writable) continue;
    absl::Status s = layer.store->Put(ns, key, payload);
    kept = kept || s.ok();
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  return kept ? absl::OkStatus() : first_error;
}

std::string TieredEntryStore::Describe(absl::string_view ns, absl::string_view key) const {
  std::vector<std::string> parts;
  for (const Layer& layer : layers_) parts.push_back(layer.store->Describe(ns, key));
  return absl::StrJoin(parts, " | ");
}

int64_t TieredEntryStore::Rejected() const {
  int64_t n = 0;
  for (const Layer& layer : layers_) n += layer.store->Rejected();
  return n;
}

}  // namespace shapeshift::runtime::persist
