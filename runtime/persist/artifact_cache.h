// ArtifactCache: a directory of named byte blobs that outlives the process —
// the persistent half of "compile once": a second process with the same
// cache directory loads compiled objects (and, through the Dispatcher, the
// rest of an artifact) instead of compiling them.
//
// Layout: <dir>/<namespace>/<key>, one file per entry in the artifact_file.h
// format. Writes go to a temporary file in the same directory and are
// renamed into place, so a reader (another thread or process) sees either
// the old entry, the new one or none — never half of one; concurrent
// writers of one key leave one complete winner. A crash mid-write leaves at
// most a dot-file that no lookup reads.
//
// Damage is never loaded: a truncated file, a wrong magic or format
// version, a length that does not match the file, a checksum mismatch or a
// file filed under another key is *rejected* — counted, reported (the
// warning stream gets the file name and the reason; last_problem keeps it),
// deleted, and answered as a miss, so the caller's next Put rebuilds it.
//
// Entries are opened with O_NONBLOCK | O_NOFOLLOW and must be regular
// files (fstat): a FIFO, directory, symbolic link, socket or device
// squatting on an entry's name (or a non-directory on a namespace's) is
// never read or waited on. It is moved aside once — renamed to
// `.<name>.quarantined.<pid>.<n>` in the same directory, which no lookup
// reads — counted as rejected, reported naming the file, and answered as a
// miss; the next Put then writes the entry, so the warning is not repeated
// on every run.
#ifndef SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_CACHE_H_
#define SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_CACHE_H_

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/persist/entry_store.h"

namespace shapeshift::runtime::persist {

struct ArtifactCacheOptions {
  // Larger payloads are refused by Put and rejected by Get.
  uint64_t max_payload_bytes = uint64_t{256} << 20;
  // Where rejected entries and I/O errors are reported; null: only counted.
  std::ostream* warnings = &std::cerr;
};

struct ArtifactCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;    // includes rejected entries
  int64_t writes = 0;
  int64_t rejected = 0;  // damaged entries found (and deleted), squatters moved aside
  int64_t errors = 0;    // I/O errors and refused writes
  std::string last_problem;  // the latest rejection or error, with the file name
};

// $XDG_CACHE_HOME/shapeshift when XDG_CACHE_HOME is an absolute path (the
// XDG spec ignores relative ones), else $HOME/.cache/shapeshift.
absl::StatusOr<std::string> DefaultCacheDir();

// Where a session keeps its weights when its caller names no place
// (SessionOptions::weights_dir; the CLI's and the Python session's default):
// `weights` under `cache_dir`, or under DefaultCacheDir() when the cache is
// off; empty (in memory) when there is no default location.
std::string DefaultWeightsDir(const std::string& cache_dir);

// The local layer of a persistent cache (entry_store.h).
class ArtifactCache : public EntryStore {
 public:
  // Creates `dir` (and parents) if needed; an error if it cannot be created
  // or is not a writable directory.
  static absl::StatusOr<std::unique_ptr<ArtifactCache>> Open(const std::string& dir,
                                                             const ArtifactCacheOptions& options = {});

  // Namespaces and keys are file names: 1 to 128 of [A-Za-z0-9_.-], not
  // starting with '.'; anything else is InvalidArgument.
  //
  // The bytes last Put, or nullopt when there is no entry or it was
  // rejected. An error for a bad name or a file that exists but cannot be
  // read.
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view ns, absl::string_view key) override;
  // Atomically replaces the entry. Refuses payloads over max_payload_bytes.
  absl::Status Put(absl::string_view ns, absl::string_view key, absl::string_view payload) override;

  const std::string& dir() const { return dir_; }
  // The file an entry lives in (whether or not it exists).
  std::string PathOf(absl::string_view ns, absl::string_view key) const;
  ArtifactCacheStats stats() const;
  std::string Describe(absl::string_view ns, absl::string_view key) const override { return PathOf(ns, key); }
  int64_t Rejected() const override { return stats().rejected; }

 private:
  ArtifactCache(std::string dir, const ArtifactCacheOptions& options) : dir_(std::move(dir)), options_(options) {}
  absl::StatusOr<std::optional<std::string>> Read(const std::string& path, absl::string_view key);
  void Reject(const std::string& path, absl::string_view reason);
  // Renames a non-regular file at `path` (or a non-directory holding its
  // namespace directory's name) to a quarantine name and reports it; OK
  // when `path` is absent or a regular file by now.
  absl::Status MoveAsideIfNotRegular(const std::string& path);
  absl::Status Error(absl::Status status);

  const std::string dir_;
  const ArtifactCacheOptions options_;
  mutable absl::Mutex mu_;
  ArtifactCacheStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_ARTIFACT_CACHE_H_
