// AOT bundles: one file holding everything a process needs to serve a model
// without compiling — the model, every entry's spec and guards, each
// kernel's machine code, the dim domain, and a coverage certificate — and
// the sessions that serve from one with 0 compiles.
//
//   auto summary = CompileBundle(std::move(model), {.source = "bert.onnx", .policy = ...}, "bert.ssb");
//   auto bundle = ReadBundle("bert.ssb", key);           // checksum, signature
//   auto model = ImportBundleModel(*bundle);             // its graph and ranges
//   auto session = OpenBundleSession(*bundle, std::move(*model), {});  // target check, 0 compiles
//
// Why entries are re-created instead of deserialized: see
// runtime/specialization/manifest.h. The bundle is the same manifest and the
// same object records the persistent cache holds, in one checksummed (and,
// with a key, signed) file (bundle_file.h), plus a header saying which
// machine code it is — target triple, CPU, CPU features, LLVM version,
// compiler identity — so that a process on another machine, or another
// build of shapeshift, refuses it with a message naming the mismatch rather
// than finding every kernel missing and compiling them.
#ifndef SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_H_
#define SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cpu/host_target.h"
#include "graph/onnx/importer.h"
#include "runtime/bundle/bundle_file.h"
#include "runtime/bundle/certificate.h"
#include "runtime/persist/entry_store.h"
#include "runtime/persist/remote_cache.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/policy.h"
#include "runtime/session.h"

namespace shapeshift::runtime::bundle {

// What the header says about the bundle.
struct BundleHeader {
  std::string source;  // the model it was compiled from (a path or builtin:NAME)
  codegen::cpu::HostTarget target;
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  BucketOptions buckets;
  int vector_width = 0;
  bool pack_small_row_gemms = true;
  bool long_rows_on_panels = false;
  std::map<std::string, DimRange> domain;  // declared ranges, by symbol
  std::string manifest_key;
  int64_t entries = 0;
  int64_t objects = 0;
  CoverageCertificate certificate;
};

nlohmann::json HeaderToJson(const BundleHeader& h);
absl::StatusOr<BundleHeader> HeaderFromJson(const nlohmann::json& j);

struct BundleCompileOptions {
  std::string source;
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  BucketOptions buckets;
  CompileOptions compile;   // vector width, small-row packing (dims: already in the model)
  std::string cache_dir;    // optional: objects already there are reused (and collected)
  std::string signing_key;  // non-empty: HMAC-SHA-256 signed
  // Run after the ahead-of-time compile, before the snapshot (`--warm TRACE`:
  // its requests compile the entries they need); tier-ups are waited for.
  std::function<absl::Status(Session&)> warm;
};

struct BundleSummary {
  BundleHeader header;
  int64_t compiles = 0;  // the bundle compile's own (the loader makes none)
  uint64_t bytes = 0;
};

// Compiles `model` (its env's ranges are the domain) under the policy, runs
// `warm`, proves coverage and writes the bundle to `path` (atomically).
// Errors name the step (export, compile, warm request, write). The weights
// go from `model` to a temporary file beside `path` (its weights record to
// be), are imported back from there for the compile (into a spill in that
// directory where its file system takes one), and are copied into the
// bundle piece by piece: no size limit, and never two copies in memory.
absl::StatusOr<BundleSummary> CompileBundle(ImportedModel model, const BundleCompileOptions& options,
                                            const std::string& path);

// A bundle read and verified (checksum, signature), not yet checked against
// this machine.
struct Bundle {
  std::string path;
  BundleHeader header;
  std::string model_onnx;  // the message; its initializers are in `weights`
  PayloadInFile weights;   // the weights record, where it lies in the file
  FileIdentity file;       // the file that was verified
  std::string manifest;  // the manifest text (manifest.h)
  std::shared_ptr<persist::MemoryEntryStore> entries;  // read-only: manifest + objects
};

// Reads and hashes the file in pieces; the weights stay in the file.
absl::StatusOr<Bundle> ReadBundle(const std::string& path, const std::string& signing_key);

// OK when the bundle's machine code is for `host`; otherwise
// FailedPrecondition naming each difference (compiler identity, LLVM
// version, triple, CPU, and the CPU features missing or extra here).
absl::Status CheckBundleTarget(const BundleHeader& header, const codegen::cpu::HostTarget& host);

// The embedded model, imported with the bundle's declared ranges, its
// weights read from the bundle file (into `spill` when given, file to file:
// ImportOptions::spill). A file that is no longer the one ReadBundle
// verified (replaced, rewritten) is refused after the import: its weights
// are never mixed with another file's manifest.
absl::StatusOr<ImportedModel> ImportBundleModel(const Bundle& bundle, ConstantSpill* spill = nullptr);

struct BundleSessionOptions {
  std::string cache_dir;                // later compiles (outside a proven domain) persist here
  std::string weights_dir;              // as SessionOptions::weights_dir (ImportBundleModel's spill there)
  persist::RemoteCacheOptions remote_cache;
  std::string recompile_log;
  int recompile_limit = 64;
  TierUpOptions tier_up;
};

// A session serving from the bundle: the target is checked first, every
// entry is re-created from the bundle's objects, and anything but 0
// compiles and 0 LLVM compiles is an error naming what had to be compiled.
// `model` must be ImportBundleModel(bundle)'s.
absl::StatusOr<std::unique_ptr<Session>> OpenBundleSession(const Bundle& bundle, ImportedModel model,
                                                                       const BundleSessionOptions& options);

// The guard sets the cache's entries check, most specific first (what a
// certificate is about; its domain is the env's DomainPredicate()).
std::vector<std::vector<Predicate>> EntryGuardSets(const SpecializationCache& cache);

}  // namespace shapeshift::runtime::bundle

#endif  // SHAPESHIFT_RUNTIME_BUNDLE_BUNDLE_H_
