// EntrySpec: what one specialized compile was asked for — the tier, the
// trigger's slot values and (bucketed) the buckets.
//
// Why its own record: it is enough to compile the same entry again, so the
// cache keeps it with each entry and a persistent-cache manifest stores it.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_SPEC_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/specialization/bucket.h"
#include "runtime/specialization/policy.h"

namespace shapeshift::runtime {

// What to compile: enough to compile the same entry again (it is what a
// persistent-cache manifest stores).
struct EntrySpec {
  Tier tier = Tier::kPolymorphic;
  // Slot values of the request the entry is compiled for; empty for the
  // ahead-of-time polymorphic compile.
  std::vector<int64_t> trigger;
  // kBucketed: one bucket per slot, holding the trigger value, and the
  // provenance reason of its bounds ("power-of-two bucket 65..128 of seq").
  std::vector<Bucket> buckets;
  std::vector<std::string> bucket_reasons;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_SPEC_H_
