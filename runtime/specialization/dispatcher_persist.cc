// The Dispatcher's persistent-cache half: re-creating the entries a
// manifest lists (Create) and rewriting the manifest after every change to
// the cache. See manifest.h for why entries are re-compiled with the object
// store rather than deserialized.
#include <optional>

#include "absl/container/flat_hash_set.h"
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
  // The compile keys already re-created: the remote's records repeat what
  // the local manifest lists once this process or another has written both.
  absl::flat_hash_set<std::string> loaded;
  if (manifests_ != nullptr) {
    absl::StatusOr<std::optional<std::string>> text = manifests_->Get(kManifestNamespace, manifest_key_);
    const std::string where = absl::StrCat("manifest '", manifests_->Describe(kManifestNamespace, manifest_key_), "'");
    if (!text.ok()) {
      CacheWarning(absl::StrCat("reading the manifest: ", text.status().message(), "; compiling instead"));
      absl::MutexLock lock(&mu_);
      ++stats_.cache_errors;
    } else if (text->has_value()) {  // else: first run (or a damaged file the cache already reported)
      absl::StatusOr<std::vector<ManifestEntry>> entries = DecodeManifest(**text, manifest_key_);
      if (!entries.ok()) {
        CacheWarning(absl::StrCat(where, " is corrupted (", entries.status().message(),
                                  "); ignored, it is rebuilt as entries compile"));
        absl::MutexLock lock(&mu_);
        ++stats_.cache_errors;
      } else {
        for (const ManifestEntry& m : *entries) {
          if (RecreateEntry(m, where, /*remote=*/false)) loaded.insert(CompileKey(m.spec));
        }
      }
    }
  }
  if (remote_ == nullptr) return;
  bool added = false;
  for (const auto& [field, payload] : remote_->GetRecords(manifest_key_)) {
    const std::string where = absl::StrCat("remote entry '", remote_->RecordsKey(manifest_key_), "#", field, "'");
    absl::StatusOr<std::vector<ManifestEntry>> entries = DecodeManifest(payload, manifest_key_);
    if (!entries.ok() || entries->size() != 1 || CompileKey(entries->front().spec) != field) {
      // Signed by a holder of the key, so not a forgery: a writer of another
      // format or a bug. Ignored; the next compile of that entry replaces it.
      CacheWarning(absl::StrCat(where, " is not a record of one entry (",
                                entries.ok() ? "wrong shape" : entries.status().message(), "); ignored"));
      absl::MutexLock lock(&mu_);
      ++stats_.cache_errors;
      continue;
    }
    if (loaded.contains(field)) continue;
    if (RecreateEntry(entries->front(), where, /*remote=*/true)) {
      loaded.insert(field);
      added = true;
    }
  }
  if (added && disk_ != nullptr) SaveManifest();
}

bool Dispatcher::RecreateEntry(const ManifestEntry& m, const std::string& where, bool remote) {
  Z3Bridge z3(options_.z3_timeout_ms);
  absl::StatusOr<CompiledEntry> compiled =
      CompileSpecializedEntry(*graph_, *env_, cache_.slots(), m.spec, options_.compile, z3);
  if (!compiled.ok()) {
    CacheWarning(absl::StrCat(where, ": re-creating a ", TierName(m.spec.tier), " entry failed (",
                              compiled.status().message(), "); skipped"));
    absl::MutexLock lock(&mu_);
    ++stats_.cache_errors;
    return false;
  }
  // The compile is the truth; a different guard set means the compiler
  // changed what it asks, worth a line but not a refusal.
  if (AtomTexts(compiled->guards) != AtomTexts(m.guards)) {
    CacheWarning(absl::StrCat(where, ": the re-created entry's guards (",
                              absl::StrJoin(AtomTexts(compiled->guards), " && "), ") differ from the recorded (",
                              absl::StrJoin(AtomTexts(m.guards), " && "), "); using the re-created ones"));
  }
  absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
      cache_.Insert(compiled->tier, std::move(compiled->guards), std::move(compiled->artifact), m.spec,
                    std::move(compiled->serves));
  if (!entry.ok()) {
    CacheWarning(absl::StrCat(where, ": ", entry.status().message(), "; skipped"));
    absl::MutexLock lock(&mu_);
    ++stats_.cache_errors;
    return false;
  }
  if (tier_up_ != nullptr && (*entry)->tier != Tier::kPolymorphic) {
    tier_up_->AlreadySpecialized(RegionOf(m.spec, buckets_));
  }
  absl::MutexLock lock(&mu_);
  ++stats_.cache_loads;
  stats_.llvm_compiles += (*entry)->artifact->program->stats().llvm_compiles;
  if (remote) ++stats_.remote_loads;
  return true;
}

void Dispatcher::SaveManifest() {
  absl::MutexLock lock(&manifest_mu_);
  const std::string text = EncodeManifest(manifest_key_, cache_.entries());
  if (absl::Status s = manifests_->Put(kManifestNamespace, manifest_key_, text); !s.ok()) {
    CacheWarning(absl::StrCat("writing the manifest: ", s.message()));
    absl::MutexLock stats_lock(&mu_);
    ++stats_.cache_errors;
  }
}

}  // namespace shapeshift::runtime
