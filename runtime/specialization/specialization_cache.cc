#include "runtime/specialization/specialization_cache.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {
namespace {

// True when `a` must be tried before `b`: higher tier, then exact shapes (a
// single point), then more atoms (a narrower region), then the older entry
// (stable across inserts).
bool MoreSpecific(const CacheEntry& a, const CacheEntry& b) {
  if (a.tier != b.tier) return static_cast<int>(a.tier) > static_cast<int>(b.tier);
  if (a.exact_shape.empty() != b.exact_shape.empty()) return !a.exact_shape.empty();
  if (a.guards.size() != b.guards.size()) return a.guards.size() > b.guards.size();
  return a.id < b.id;
}

// The pinned values when `guards` pin each slot to a constant exactly once
// (`slot == c`), else empty.
std::vector<int64_t> ExactShape(Tier tier, const std::vector<GuardAtom>& guards,
                                const std::vector<std::string>& slots) {
  if (tier != Tier::kStatic || guards.size() != slots.size() || slots.empty()) return {};
  std::vector<std::optional<int64_t>> pinned(slots.size());
  for (const GuardAtom& g : guards) {
    const Predicate& p = g.predicate;
    if (p.kind() != PredKind::kEq) return {};
    SymExpr sym = p.lhs().IsSymbol() ? p.lhs() : p.rhs();
    std::optional<int64_t> value = p.lhs().IsSymbol() ? p.rhs().AsConst() : p.lhs().AsConst();
    if (!sym.IsSymbol() || !value) return {};
    auto slot = std::find(slots.begin(), slots.end(), sym.symbol_name());
    if (slot == slots.end() || pinned[slot - slots.begin()]) return {};
    pinned[slot - slots.begin()] = *value;
  }
  std::vector<int64_t> shape;
  for (const std::optional<int64_t>& v : pinned) shape.push_back(*v);
  return shape;
}

}  // namespace

SpecializationCache::SpecializationCache(std::vector<std::string> slots)
    : slots_(std::move(slots)), snapshot_(std::make_shared<const Snapshot>()) {}

absl::StatusOr<std::shared_ptr<const CacheEntry>> SpecializationCache::Insert(
    Tier tier, std::vector<GuardAtom> guards, std::shared_ptr<const SpecializedArtifact> artifact, EntrySpec spec,
    std::vector<Interval> serves) {
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
  if (artifact != nullptr && artifact->program != nullptr) {
    for (const std::string& symbol : artifact->program->bound_symbols()) {
      auto slot = std::find(slots_.begin(), slots_.end(), symbol);
      if (slot == slots_.end()) {
        return absl::InternalError(absl::StrCat("specialization cache: a ", TierName(tier), " entry's program binds '",
                                                symbol, "', which no slot of the model holds"));
      }
      entry->program_slots.push_back(static_cast<int>(slot - slots_.begin()));
    }
  }
  entry->tier = tier;
  entry->guards = std::move(guards);
  entry->guard_program = *std::move(program);
  entry->exact_shape = ExactShape(tier, entry->guards, slots_);
  entry->artifact = std::move(artifact);
  entry->spec = std::move(spec);
  entry->serves = std::move(serves);
  absl::MutexLock lock(&mu_);
  entry->id = next_id_++;
  auto next = std::make_shared<Snapshot>(*snapshot_.load());
  auto at = std::upper_bound(next->entries.begin(), next->entries.end(), entry,
                             [](const auto& a, const auto& b) { return MoreSpecific(*a, *b); });
  next->entries.insert(at, entry);
  if (!entry->exact_shape.empty()) next->exact.try_emplace(entry->exact_shape, entry);
  snapshot_.store(std::move(next));
  return std::shared_ptr<const CacheEntry>(std::move(entry));
}

bool SpecializationCache::Remove(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto next = std::make_shared<Snapshot>(*snapshot_.load());
  auto it = std::find_if(next->entries.begin(), next->entries.end(), [id](const auto& e) { return e->id == id; });
  if (it == next->entries.end()) return false;
  const std::shared_ptr<const CacheEntry> removed = *it;
  next->entries.erase(it);
  const std::vector<int64_t>& shape = removed->exact_shape;
  if (auto e = next->exact.find(shape); !shape.empty() && e != next->exact.end() && e->second == removed) {
    next->exact.erase(e);
    // Another entry pinning the same shape (if any) takes its place.
    for (const std::shared_ptr<const CacheEntry>& other : next->entries) {
      if (other->exact_shape == shape) {
        next->exact.try_emplace(shape, other);
        break;
      }
    }
  }
  snapshot_.store(std::move(next));
  return true;
}

std::shared_ptr<const CacheEntry> SpecializationCache::Find(absl::Span<const int64_t> slot_values) const {
  const std::shared_ptr<const Snapshot> s = snapshot_.load();
  if (!s->exact.empty()) {
    if (auto it = s->exact.find(slot_values); it != s->exact.end()) return it->second;
  }
  for (const std::shared_ptr<const CacheEntry>& e : s->entries) {
    if (!e->exact_shape.empty()) continue;  // the probe above covers them
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
  return snapshot_.load()->entries;
}

size_t SpecializationCache::size() const {
  return snapshot_.load()->entries.size();
}

}  // namespace shapeshift::runtime
