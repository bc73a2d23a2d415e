// The Dispatcher's remote-cache half: cross-process single flight. Before a
// compile, a replica looks for the entry's record (another replica compiled
// it: re-create it from the remote objects, no LLVM), else takes the entry's
// lease (SET NX PX) and compiles, else — the lease is held — waits, bounded
// by RemoteCacheOptions::wait_ms, for the record to appear. After a real
// compile the entry's record is published (one field of the model's hash,
// see remote_cache.h) and the lease released. Every remote failure degrades
// to a local compile; nothing here fails a request.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/manifest.h"

namespace shapeshift::runtime {

Dispatcher::RemoteClaim Dispatcher::ClaimRemote(const EntrySpec& spec) {
  RemoteClaim claim;
  if (remote_ == nullptr) return claim;
  const std::string field = CompileKey(spec);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(remote_->options().wait_ms);
  auto done = [&](RemoteClaim& c) -> RemoteClaim {
    if (c.waited) {
      absl::MutexLock lock(&mu_);
      ++stats_.remote_waits;
    }
    return std::move(c);
  };
  for (;;) {
    if (remote_->GetRecord(manifest_key_, field).has_value()) {
      claim.published = true;
      return done(claim);
    }
    switch (remote_->TryLease(manifest_key_, field)) {
      case persist::RemoteCache::Lease::kAcquired:
        // The holder may have published and released between the two calls.
        if (remote_->GetRecord(manifest_key_, field).has_value()) {
          remote_->ReleaseLease(manifest_key_, field);
          claim.published = true;
        } else {
          claim.leased = true;
          claim.keeper = std::make_unique<persist::RemoteCache::LeaseKeeper>(remote_.get(), manifest_key_, field);
        }
        return done(claim);
      case persist::RemoteCache::Lease::kUnavailable:
        return done(claim);  // reported by the cache; compile locally
      case persist::RemoteCache::Lease::kHeldByAnother:
        break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      CacheWarning(absl::StrCat("waited ", remote_->options().wait_ms, " ms for another replica to compile the ",
                                field, " entry; compiling it here"));
      absl::MutexLock lock(&mu_);
      ++stats_.remote_wait_timeouts;
      ++stats_.remote_waits;
      return claim;
    }
    claim.waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(remote_->options().poll_ms));
  }
}

void Dispatcher::FinishRemote(RemoteClaim& claim, const EntrySpec& spec,
                              const std::shared_ptr<const CacheEntry>& entry) {
  if (remote_ == nullptr) return;
  const std::string field = CompileKey(spec);
  if (entry != nullptr) {
    // Objects went to the remote during the compile (the object store's
    // tiers), so the record is written last: a replica that sees it finds
    // every object. A failed write was reported; others compile it again.
    remote_->PutRecord(manifest_key_, field, EncodeManifest(manifest_key_, {entry})).IgnoreError();
  }
  claim.keeper.reset();  // stops renewing before the lease goes
  if (claim.leased) remote_->ReleaseLease(manifest_key_, field);
}

}  // namespace shapeshift::runtime
