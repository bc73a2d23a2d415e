// EntryStore: where the Dispatcher keeps and finds a model's cache entries —
// kernel objects (namespace "objects") and manifests ("manifests") — by the
// same keys whatever holds them: the local cache directory (ArtifactCache),
// the bytes of an AOT bundle (MemoryEntryStore), a remote cache shared by
// replicas (remote_cache.h), or a chain of them (TieredEntryStore).
//
// Why one interface: an entry's key says what it is (the object key covers
// kernel IR, CPU, LLVM and compiler identity; the manifest key the model,
// ranges, options and policy), so where the bytes come from must not change
// what is loaded. Every layer checks its own integrity (checksum, MAC) and
// answers a damaged entry as a miss, which the compile then rebuilds.
#ifndef SHAPESHIFT_RUNTIME_PERSIST_ENTRY_STORE_H_
#define SHAPESHIFT_RUNTIME_PERSIST_ENTRY_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace shapeshift::runtime::persist {

// Implementations are thread-safe.
class EntryStore {
 public:
  virtual ~EntryStore() = default;
  // The bytes last Put, or nullopt (no entry, or one the store refused as
  // damaged: counted and reported by the store). An error only for a bad
  // name or an unreadable entry.
  virtual absl::StatusOr<std::optional<std::string>> Get(absl::string_view ns, absl::string_view key) = 0;
  virtual absl::Status Put(absl::string_view ns, absl::string_view key, absl::string_view payload) = 0;
  // Where an entry lives, for messages (a file path, a Redis key).
  virtual std::string Describe(absl::string_view ns, absl::string_view key) const = 0;
  // Damaged entries found so far (metrics: cache errors).
  virtual int64_t Rejected() const { return 0; }
};

// An in-memory map, e.g. the entries of a loaded bundle, or what a bundle
// compile collected. `read_only` stores refuse Put (a bundle is never
// written by serving from it).
class MemoryEntryStore : public EntryStore {
 public:
  explicit MemoryEntryStore(std::string name, bool read_only = false)
      : name_(std::move(name)), read_only_(read_only) {}
  // Adds an entry regardless of read_only (filling it before use).
  void Insert(std::string ns, std::string key, std::string payload);

  absl::StatusOr<std::optional<std::string>> Get(absl::string_view ns, absl::string_view key) override;
  absl::Status Put(absl::string_view ns, absl::string_view key, absl::string_view payload) override;
  std::string Describe(absl::string_view ns, absl::string_view key) const override;

  // Every entry, by (namespace, key).
  std::map<std::pair<std::string, std::string>, std::string> Entries() const;

 private:
  const std::string name_;
  const bool read_only_;
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::string> entries_ ABSL_GUARDED_BY(mu_);
};

// Layers tried in order (e.g. bundle, local directory, remote cache). A Get
// that hits layer i copies the bytes into the writable layers before it (a
// remote hit lands in the local cache, so the next process reads it from
// disk); a Put goes to every writable layer. A layer's error is a warning
// (its store reports it) and the next layer is tried: one layer down never
// fails a lookup another layer can answer.
class TieredEntryStore : public EntryStore {
 public:
  struct Layer {
    EntryStore* store = nullptr;  // not owned
    bool writable = true;
  };
  explicit TieredEntryStore(std::vector<Layer> layers) : layers_(std::move(layers)) {}

  absl::StatusOr<std::optional<std::string>> Get(absl::string_view ns, absl::string_view key) override;
  // Ok when some writable layer kept the bytes; else the first error.
  absl::Status Put(absl::string_view ns, absl::string_view key, absl::string_view payload) override;
  std::string Describe(absl::string_view ns, absl::string_view key) const override;
  int64_t Rejected() const override;

 private:
  const std::vector<Layer> layers_;
};

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_ENTRY_STORE_H_
