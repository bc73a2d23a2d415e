#include "runtime/specialization/specialization_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {
namespace {

// True when `a` must be tried before `b`: higher tier, then more atoms (a
// narrower region), then the older entry (stable across inserts).
bool MoreSpecific(const CacheEntry& a, const CacheEntry& b) {
  if (a.tier != b.tier) return static_cast<int>(a.tier) > static_cast<int>(b.tier);
  if (a.guards.size() != b.guards.size()) return a.guards.size() > b.guards.size();
  return a.id < b.id;
}

}  // namespace

SpecializationCache::SpecializationCache(std::vector<std::string> slots) : slots_(std::move(slots)) {}

absl::StatusOr<std::shared_ptr<const CacheEntry>> SpecializationCache::Insert(
    Tier tier, std::vector<GuardAtom> guards, std::shared_ptr<const SpecializedArtifact> artifact) {
  std::vector<Predicate> atoms;
  atoms.reserve(guards.size());
  for (const GuardAtom& g : guards) atoms.push_back(g.predicate);
  absl::StatusOr<GuardProgram> program = GuardProgram::Compile(atoms, slots_);
  if (!program.ok()) {
    return absl::Status(program.status().code(),
                        absl::StrCat("specialization cache: guards of a ", TierName(tier),
                                     " entry: ", program.status().message()));
  }
  auto entry = std::make_shared<CacheEntry>();
  entry->tier = tier;
  entry->guards = std::move(guards);
  entry->guard_program = *std::move(program);
  entry->artifact = std::move(artifact);
  absl::MutexLock lock(&mu_);
  entry->id = next_id_++;
  auto at = std::upper_bound(entries_.begin(), entries_.end(), entry,
                             [](const auto& a, const auto& b) { return MoreSpecific(*a, *b); });
  entries_.insert(at, entry);
  return std::shared_ptr<const CacheEntry>(std::move(entry));
}

bool SpecializationCache::Remove(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [id](const auto& e) { return e->id == id; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

std::shared_ptr<const CacheEntry> SpecializationCache::Find(absl::Span<const int64_t> slot_values) const {
  absl::ReaderMutexLock lock(&mu_);
  for (const std::shared_ptr<const CacheEntry>& e : entries_) {
    if (e->guard_program.Evaluate(slot_values).pass) return e;
  }
  return nullptr;
}

std::vector<EntryMiss> SpecializationCache::ExplainMiss(absl::Span<const int64_t> slot_values) const {
  Assignment values;
  for (size_t i = 0; i < slots_.size() && i < slot_values.size(); ++i) values[slots_[i]] = slot_values[i];
  std::vector<EntryMiss> out;
  for (const std::shared_ptr<const CacheEntry>& e : entries()) {
    EntryMiss miss{e, {}};
    for (size_t i = 0; i < e->guards.size(); ++i) {
      absl::StatusOr<bool> holds = e->guards[i].predicate.Evaluate(values);
      if (!holds.ok() || !*holds) miss.failing.push_back(i);  // fail closed, like GuardProgram
    }
    out.push_back(std::move(miss));
  }
  return out;
}

std::vector<std::shared_ptr<const CacheEntry>> SpecializationCache::entries() const {
  absl::ReaderMutexLock lock(&mu_);
  return entries_;
}

size_t SpecializationCache::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace shapeshift::runtime
