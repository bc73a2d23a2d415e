// RemoteCache: a compile cache on Redis shared by the replicas of a service,
// so that N processes serving one model compile each entry once between
// them (`--remote-cache redis://HOST:PORT[/DB]`).
//
// What is stored, under the same keys as the local cache (entry_store.h):
//   <prefix>objects:<digest>   a kernel's object record (the backend's key)
//   <prefix>entries:<model>    a hash: one field per cache entry of a model
//                              (its CompileKey, e.g. "static:37"), the value a
//                              one-entry manifest (manifest.h). One field per
//                              entry, not one manifest value, so replicas that
//                              compile different entries at once never
//                              overwrite each other's.
//   <prefix>lease:<model>:<entry>  single flight: SET NX PX by the replica
//                              compiling that entry (renewed every lease_ms/3
//                              while it compiles); the others wait for the
//                              entry's field to appear (bounded), then
//                              re-create it from the objects without LLVM.
//
// Trust: every value is signed, HMAC-SHA-256 over the Redis key (and hash
// field) and the payload with the shared key (signing.h), so a client without
// the key cannot inject machine code: a value that is unsigned, altered,
// truncated or copied under another key is *refused* — counted, reported on
// the warning stream, and answered as a miss, which the caller's compile then
// overwrites with a good entry.
//
// Degradation: Redis down, slow (every command has a timeout) or full (an
// OOM reply) is a warning and a miss or a skipped write, never a failed
// request; after a connection failure the server is not asked again for
// `retry_after_ms` (so an outage costs one timeout, not one per lookup),
// then reconnected. Entries over `max_entry_bytes` are not written; every
// write sets `ttl_ms`.
//
// Thread-safety: all methods may be called concurrently (one connection,
// serialized by a mutex: hiredis contexts are not thread-safe).
#ifndef SHAPESHIFT_RUNTIME_PERSIST_REMOTE_CACHE_H_
#define SHAPESHIFT_RUNTIME_PERSIST_REMOTE_CACHE_H_

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/persist/entry_store.h"

struct redisContext;
struct redisReply;

namespace shapeshift::runtime::persist {

struct RemoteCacheOptions {
  std::string url;          // redis://HOST:PORT[/DB]
  std::string signing_key;  // shared by the replicas; at least kMinSigningKeyBytes
  std::string prefix = "shapeshift:";
  int64_t ttl_ms = int64_t{7} * 24 * 3600 * 1000;  // every write expires after this
  uint64_t max_entry_bytes = uint64_t{64} << 20;    // larger values are not written
  int timeout_ms = 1000;        // connect and each command; slower counts as down
  int retry_after_ms = 5000;    // after a connection failure, skip the server this long
  int64_t lease_ms = 30000;     // a lease its holder stopped renewing (it died) expires after this
  int64_t wait_ms = 300000;     // the longest a replica waits for another's compile
  int poll_ms = 25;             // how often a waiting replica looks for the entry
  std::ostream* warnings = &std::cerr;  // null: only counted
};

struct RemoteCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;          // refused values included
  int64_t writes = 0;
  int64_t refused = 0;         // unsigned, badly signed, truncated or misfiled values
  int64_t too_large = 0;       // writes skipped for max_entry_bytes
  int64_t errors = 0;          // connection failures, timeouts, error replies (e.g. full)
  int64_t skipped = 0;         // operations not sent while the server was down
  int64_t bytes_read = 0;      // payload bytes of accepted values
  int64_t bytes_written = 0;
  int64_t leases = 0;          // compile leases this process took
  std::string last_problem;
};

// redis://HOST:PORT[/DB] parsed; an error says what is malformed.
struct RedisAddress {
  std::string host;
  int port = 6379;
  int db = 0;
};
absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url);

class RemoteCache : public EntryStore {
 public:
  // Checks the URL and the key; does not need the server to be up (the
  // first operation connects, and a server that is down degrades).
  static absl::StatusOr<std::unique_ptr<RemoteCache>> Open(const RemoteCacheOptions& options);
  ~RemoteCache() override;

  // EntryStore: namespaced values (kernel objects).
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view ns, absl::string_view key) override;
  absl::Status Put(absl::string_view ns, absl::string_view key, absl::string_view payload) override;
  std::string Describe(absl::string_view ns, absl::string_view key) const override;
  int64_t Rejected() const override;

  // The entry records of a model (field → payload), each verified; refused
  // ones are left out (and counted). Empty when the server is down.
  std::vector<std::pair<std::string, std::string>> GetRecords(absl::string_view model);
  std::optional<std::string> GetRecord(absl::string_view model, absl::string_view field);
  absl::Status PutRecord(absl::string_view model, absl::string_view field, absl::string_view payload);

  // Single flight for one entry of a model.
  enum class Lease { kAcquired, kHeldByAnother, kUnavailable };
  Lease TryLease(absl::string_view model, absl::string_view field);
  // Deletes the lease if this process still holds it.
  void ReleaseLease(absl::string_view model, absl::string_view field);
  // Extends a held lease by lease_ms; false when it is not (or no longer)
  // this process's, or the server is down.
  bool RenewLease(absl::string_view model, absl::string_view field);

  // Renews a held lease every lease_ms / 3 on a thread of its own until
  // destroyed, so a compile longer than lease_ms keeps it while a holder
  // that died loses it within lease_ms.
  class LeaseKeeper {
   public:
    LeaseKeeper(RemoteCache* cache, std::string model, std::string field);
    ~LeaseKeeper();
    LeaseKeeper(const LeaseKeeper&) = delete;
    LeaseKeeper& operator=(const LeaseKeeper&) = delete;

   private:
    absl::Mutex mu_;
    bool stop_ ABSL_GUARDED_BY(mu_) = false;
    std::thread thread_;
  };

  const RemoteCacheOptions& options() const { return options_; }
  RemoteCacheStats stats() const;
  // The Redis key of a value / record hash / lease (tests poison them).
  std::string ValueKey(absl::string_view ns, absl::string_view key) const;
  std::string RecordsKey(absl::string_view model) const;
  std::string LeaseKey(absl::string_view model, absl::string_view field) const;
  // The signed form of `payload` stored under `name` (a value's key, or
  // records key + "#" + field) — tests forge and poison with it.
  static std::string Sign(absl::string_view signing_key, absl::string_view name, absl::string_view payload);

 private:
  struct Freer {
    void operator()(redisContext* c) const;
    void operator()(redisReply* r) const;
  };
  using Reply = std::unique_ptr<redisReply, Freer>;

  RemoteCache(RemoteCacheOptions options, RedisAddress address);
  // One command; null when the server is down, slow, or answered an error
  // (each counted and reported; a connection failure marks it down).
  Reply Command(const std::vector<std::string>& args) ABSL_LOCKS_EXCLUDED(mu_);
  bool ConnectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DownLocked(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Problem(const std::string& text, int64_t RemoteCacheStats::*counter) ABSL_LOCKS_EXCLUDED(mu_);
  // The payload of a signed value, or nullopt (refused: counted, reported).
  std::optional<std::string> Verify(const std::string& name, const std::string& value);

  const RemoteCacheOptions options_;
  const RedisAddress address_;
  const std::string lease_token_;  // unique per process and cache
  mutable absl::Mutex mu_;
  std::unique_ptr<redisContext, Freer> context_ ABSL_GUARDED_BY(mu_);
  int64_t down_until_ms_ ABSL_GUARDED_BY(mu_) = 0;  // steady-clock ms; 0 = up
  bool warned_down_ ABSL_GUARDED_BY(mu_) = false;
  RemoteCacheStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shapeshift::runtime::persist

#endif  // SHAPESHIFT_RUNTIME_PERSIST_REMOTE_CACHE_H_
