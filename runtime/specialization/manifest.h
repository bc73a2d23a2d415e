// The persistent-cache manifest: which entries a model's Dispatcher had
// compiled, so that the next process re-creates them instead of compiling.
//
// Why a manifest and not serialized Programs: a Program is kernels (whose
// machine code DISK's object store already keeps, keyed by kernel IR, target
// CPU and compiler version), oneDNN primitives (created at load, which is
// cheap) and a plan derived from the graph. So an entry is re-created by
// running the same compile (entry_compiler.h) for the same EntrySpec with
// the object store attached: no LLVM work, and by construction the same
// artifact and guards as the original compile — nothing about the artifact
// is trusted from disk except what to compile.
//
// The manifest is keyed by the model (graph text, constant bytes, declared
// ranges), the compile options that change code, the policy and the bucket
// scheme (ManifestKey); it lists each entry's tier, trigger values, buckets
// and guard atoms (text + provenance, for people and for a check that the
// re-created entry asked the same questions). JSON inside DISK's
// checksummed ArtifactCache file format (namespace "manifests").
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_MANIFEST_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_MANIFEST_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "runtime/compile_options.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/entry_spec.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/recompile_event.h"
#include "runtime/specialization/specialization_cache.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

inline constexpr absl::string_view kManifestNamespace = "manifests";

struct ManifestEntry {
  EntrySpec spec;
  Tier tier = Tier::kPolymorphic;  // the entry's tier after generalization
  std::vector<AtomRecord> guards;
};

// A file-name-safe key ("m" + 16 hex digits) over everything that decides
// which entries a Dispatcher compiles and what they contain.
std::string ManifestKey(const Graph& graph, const ShapeEnv& env, const CompileOptions& options,
                        SpecializationPolicy policy, const BucketOptions& buckets);

// The entries of a cache, most specific first, as manifest text.
std::string EncodeManifest(absl::string_view model_key,
                           const std::vector<std::shared_ptr<const CacheEntry>>& entries);
// An error (naming what is wrong) for text that is not a manifest of
// `model_key`: malformed JSON, a missing or mistyped field, another key.
absl::StatusOr<std::vector<ManifestEntry>> DecodeManifest(absl::string_view text, absl::string_view model_key);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_MANIFEST_H_
