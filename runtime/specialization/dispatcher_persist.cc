// The Dispatcher's persistent-cache half: re-creating the entries a
// manifest lists (Create) and rewriting the manifest after every change to
// the cache. See manifest.h for why entries are re-compiled with the object
// store rather than deserialized.
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/entry_compiler.h"
#include "runtime/specialization/manifest.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {
namespace {

std::vector<std::string> AtomTexts(const std::vector<GuardAtom>& guards) {
  std::vector<std::string> out;
  for (const GuardAtom& g : guards) out.push_back(g.predicate.ToString());
  return out;
}

std::vector<std::string> AtomTexts(const std::vector<AtomRecord>& guards) {
  std::vector<std::string> out;
  for (const AtomRecord& g : guards) out.push_back(g.atom);
  return out;
}

// The region key the tier-up model uses for a specialized entry: its
// bucket per slot (a static entry's trigger lies in one).
std::vector<int64_t> RegionOf(const EntrySpec& spec, const BucketScheme& buckets) {
  std::vector<int64_t> region;
  for (size_t i = 0; i < spec.trigger.size(); ++i) {
    const Bucket b = buckets.BucketOf(i, spec.trigger[i]);
    region.push_back(b.lo);
    region.push_back(b.hi);
  }
  return region;
}

}  // namespace

void Dispatcher::CacheWarning(const std::string& text) {
  if (options_.cache_warnings != nullptr) *options_.cache_warnings << "shapeshift: persistent cache: " << text << "\n";
}

void Dispatcher::LoadManifest() {
  manifest_key_ = ManifestKey(*graph_, *env_, options_.compile, options_.policy, options_.buckets);
  absl::StatusOr<std::optional<std::string>> text = disk_->Get(kManifestNamespace, manifest_key_);
  if (!text.ok()) {
    CacheWarning(absl::StrCat("reading the manifest: ", text.status().message(), "; compiling instead"));
    absl::MutexLock lock(&mu_);
    ++stats_.cache_errors;
    return;
  }
  if (!text->has_value()) return;  // first run (or a damaged file the cache already reported)
  const std::string path = disk_->PathOf(kManifestNamespace, manifest_key_);
  absl::StatusOr<std::vector<ManifestEntry>> entries = DecodeManifest(**text, manifest_key_);
  if (!entries.ok()) {
    CacheWarning(absl::StrCat("manifest '", path, "' is corrupted (", entries.status().message(),
                              "); ignored, it is rebuilt as entries compile"));
    absl::MutexLock lock(&mu_);
    ++stats_.cache_errors;
    return;
  }
  Z3Bridge z3(options_.z3_timeout_ms);
  for (const ManifestEntry& m : *entries) {
    absl::StatusOr<CompiledEntry> compiled =
        CompileSpecializedEntry(*graph_, *env_, cache_.slots(), m.spec, options_.compile, z3);
    if (!compiled.ok()) {
      CacheWarning(absl::StrCat("manifest '", path, "': re-creating a ", TierName(m.spec.tier),
                                " entry failed (", compiled.status().message(), "); skipped"));
      absl::MutexLock lock(&mu_);
      ++stats_.cache_errors;
      continue;
    }
    // The compile is the truth; a different guard set means the compiler
    // changed what it asks, worth a line but not a refusal.
    if (AtomTexts(compiled->guards) != AtomTexts(m.guards)) {
      CacheWarning(absl::StrCat("manifest '", path, "': the re-created entry's guards (",
                                absl::StrJoin(AtomTexts(compiled->guards), " && "), ") differ from the recorded (",
                                absl::StrJoin(AtomTexts(m.guards), " && "), "); using the re-created ones"));
    }
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        cache_.Insert(compiled->tier, std::move(compiled->guards), std::move(compiled->artifact), m.spec,
                      std::move(compiled->serves));
    if (!entry.ok()) {
      CacheWarning(absl::StrCat("manifest '", path, "': ", entry.status().message(), "; skipped"));
      absl::MutexLock lock(&mu_);
      ++stats_.cache_errors;
      continue;
    }
    if (tier_up_ != nullptr && (*entry)->tier != Tier::kPolymorphic) {
      tier_up_->AlreadySpecialized(RegionOf(m.spec, buckets_));
    }
    absl::MutexLock lock(&mu_);
    ++stats_.cache_loads;
  }
}

void Dispatcher::SaveManifest() {
  absl::MutexLock lock(&manifest_mu_);
  const std::string text = EncodeManifest(manifest_key_, cache_.entries());
  if (absl::Status s = disk_->Put(kManifestNamespace, manifest_key_, text); !s.ok()) {
    CacheWarning(absl::StrCat("writing the manifest: ", s.message()));
    absl::MutexLock stats_lock(&mu_);
    ++stats_.cache_errors;
  }
}

}  // namespace shapeshift::runtime
