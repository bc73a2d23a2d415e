#include "runtime/bundle/bundle.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/onnx/exporter.h"
#include "runtime/specialization/manifest.h"

namespace shapeshift::runtime::bundle {
namespace {

using nlohmann::json;

constexpr int kHeaderFormat = 1;

json TargetJson(const codegen::cpu::HostTarget& t) {
  return json{{"triple", t.triple}, {"cpu", t.cpu}, {"features", t.features}, {"llvm", t.llvm_version},
              {"compiler", t.compiler}};
}

std::set<std::string> FeatureSet(const std::string& features) {
  std::set<std::string> out;
  for (absl::string_view f : absl::StrSplit(features, ',', absl::SkipEmpty())) out.insert(std::string(f));
  return out;
}

// The ImportOptions that re-create the bundle's model exactly: the recorded
// ranges as declared ranges (the exporter also wrote them into the model).
ImportOptions ImportFor(const BundleHeader& h) {
  ImportOptions options;
  options.dim_ranges = h.domain;
  return options;
}

}  // namespace

nlohmann::json HeaderToJson(const BundleHeader& h) {
  json domain = json::object();
  for (const auto& [name, range] : h.domain) domain[name] = json::array({range.min, range.max});
  return json{{"format", kHeaderFormat},
              {"source", h.source},
              {"target", TargetJson(h.target)},
              {"policy", SpecializationPolicyName(h.policy)},
              {"buckets",
               {{"kind", BucketKindName(h.buckets.kind)},
                {"learned_buckets", h.buckets.learned_buckets},
                {"learned_min_samples", h.buckets.learned_min_samples}}},
              {"vector_width", h.vector_width},
              {"pack_small_row_gemms", h.pack_small_row_gemms},
              {"long_rows_on_panels", h.long_rows_on_panels},
              {"domain", domain},
              {"manifest_key", h.manifest_key},
              {"entries", h.entries},
              {"objects", h.objects},
              {"certificate", CertificateToJson(h.certificate)}};
}

absl::StatusOr<BundleHeader> HeaderFromJson(const nlohmann::json& j) {
  try {
    if (j.at("format").get<int>() != kHeaderFormat) {
      return absl::InvalidArgumentError(absl::StrCat("bundle header format ", j.at("format").dump(), " (this build reads ",
                                                     kHeaderFormat, ")"));
    }
    BundleHeader h;
    h.source = j.at("source").get<std::string>();
    const json& t = j.at("target");
    h.target = {t.at("triple").get<std::string>(), t.at("cpu").get<std::string>(), t.at("features").get<std::string>(),
                t.at("llvm").get<std::string>(), t.at("compiler").get<std::string>()};
    absl::StatusOr<SpecializationPolicy> policy = ParseSpecializationPolicy(j.at("policy").get<std::string>());
    if (!policy.ok()) return policy.status();
    h.policy = *policy;
    absl::StatusOr<BucketKind> kind = ParseBucketKind(j.at("buckets").at("kind").get<std::string>());
    if (!kind.ok()) return kind.status();
    h.buckets.kind = *kind;
    h.buckets.learned_buckets = j.at("buckets").at("learned_buckets").get<int>();
    h.buckets.learned_min_samples = j.at("buckets").at("learned_min_samples").get<int64_t>();
    h.vector_width = j.at("vector_width").get<int>();
    h.pack_small_row_gemms = j.at("pack_small_row_gemms").get<bool>();
    // Bundles written before the option existed compiled with the default.
    h.long_rows_on_panels = j.value("long_rows_on_panels", false);
    for (const auto& [name, range] : j.at("domain").items()) {
      h.domain[name] = DimRange{range.at(0).get<int64_t>(), range.at(1).get<int64_t>()};
    }
    h.manifest_key = j.at("manifest_key").get<std::string>();
    h.entries = j.at("entries").get<int64_t>();
    h.objects = j.at("objects").get<int64_t>();
    absl::StatusOr<CoverageCertificate> certificate = CertificateFromJson(j.at("certificate"));
    if (!certificate.ok()) return certificate.status();
    h.certificate = *std::move(certificate);
    return h;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed bundle header: ", e.what()));
  }
}

std::vector<std::vector<Predicate>> EntryGuardSets(const SpecializationCache& cache) {
  std::vector<std::vector<Predicate>> sets;
  for (const std::shared_ptr<const CacheEntry>& e : cache.entries()) {
    std::vector<Predicate> atoms;
    for (const GuardAtom& g : e->guards) atoms.push_back(g.predicate);
    sets.push_back(std::move(atoms));
  }
  return sets;
}

absl::StatusOr<BundleSummary> CompileBundle(ImportedModel model, const BundleCompileOptions& options,
                                            const std::string& path) {
  // The bundle carries the model as ONNX; compiling from the re-imported
  // bytes makes the graph (and so the manifest key) exactly what a loader
  // will import. One ONNX message cannot pass 2 GiB (protobuf's limit): a
  // model whose weights alone do is refused here, before the export copies
  // them, rather than by the serializer after.
  uint64_t weight_bytes = 0;
  for (const Value* c : model.graph->constants()) weight_bytes += c->constant()->byte_size();
  if (weight_bytes > kMaxBundledWeightBytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model's weights are ", weight_bytes >> 20, " MiB: a bundle embeds the model as one ONNX message, which "
        "protobuf caps at 2 GiB, so a model this large cannot be bundled; serve it with `run` or a Session, whose "
        "compile cache (--cache-dir) also serves it with 0 compiles after the first run"));
  }
  absl::StatusOr<std::string> onnx = ExportOnnxBytes(*model.graph, *model.env);
  if (!onnx.ok()) return absl::Status(onnx.status().code(), absl::StrCat("exporting the model: ", onnx.status().message()));
  BundleHeader header;
  header.source = options.source;
  header.target = codegen::cpu::DetectHostTarget();
  header.policy = options.policy;
  header.buckets = options.buckets;
  header.vector_width = options.compile.vector_width;
  header.pack_small_row_gemms = options.compile.pack_small_row_gemms;
  header.long_rows_on_panels = options.compile.long_rows_on_panels;
  for (const SymbolInfo& s : model.env->symbols()) header.domain[s.name] = DimRange{s.min, s.max};
  model = ImportedModel{};  // the weights are held by the export now, once
  absl::StatusOr<ImportedModel> reimported = ImportOnnxBytes(*onnx, ImportFor(header), options.source);
  if (!reimported.ok()) {
    return absl::Status(reimported.status().code(),
                        absl::StrCat("re-importing the exported model: ", reimported.status().message()));
  }

  SessionOptions session_options;
  session_options.compile = options.compile;
  session_options.compile.dims.clear();
  session_options.policy = options.policy;
  session_options.buckets = options.buckets;
  session_options.cache_dir = options.cache_dir;
  auto collected = std::make_shared<persist::MemoryEntryStore>("bundle compile");
  session_options.front_store = collected;
  session_options.front_store_writable = true;
  header.manifest_key = ManifestKey(*reimported->graph, *reimported->env, session_options.compile, options.policy,
                                    options.buckets);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(reimported->graph), std::move(reimported->env)), session_options);
  if (!session.ok()) return session.status();
  if (options.warm) {
    if (absl::Status s = options.warm(**session); !s.ok()) return s;
  }
  (*session)->WaitForTierUps();

  const SpecializationCache& cache = (*session)->dispatcher().cache();
  header.certificate = CertifyCoverage((*session)->dispatcher().env().DomainPredicate(), EntryGuardSets(cache));
  header.entries = static_cast<int64_t>(cache.size());
  BundleContents contents;
  contents.records.push_back({std::string(kModelNamespace), std::string(kModelKey), *std::move(onnx)});
  contents.records.push_back(
      {std::string(kManifestNamespace), header.manifest_key, EncodeManifest(header.manifest_key, cache.entries())});
  for (auto& [ns_key, payload] : collected->Entries()) {
    if (ns_key.first != persist::kObjectNamespace) continue;
    contents.records.push_back({ns_key.first, ns_key.second, payload});
    ++header.objects;
  }
  contents.header = HeaderToJson(header);
  const std::string bytes = EncodeBundle(contents, options.signing_key);
  if (absl::Status s = WriteFileAtomically(path, bytes); !s.ok()) return s;
  BundleSummary summary;
  summary.header = std::move(header);
  summary.compiles = (*session)->stats().dispatcher.compiles;
  summary.bytes = bytes.size();
  return summary;
}

absl::StatusOr<Bundle> DecodeBundleBytes(absl::string_view bytes, const std::string& signing_key,
                                         const std::string& what) {
  absl::StatusOr<BundleContents> contents = DecodeBundle(bytes, signing_key, what);
  if (!contents.ok()) return contents.status();
  absl::StatusOr<BundleHeader> header = HeaderFromJson(contents->header);
  if (!header.ok()) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": ", header.status().message()));
  }
  Bundle bundle;
  bundle.path = what;
  bundle.header = *std::move(header);
  bundle.entries = std::make_shared<persist::MemoryEntryStore>(absl::StrCat("bundle ", what), /*read_only=*/true);
  bool has_model = false, has_manifest = false;
  for (BundleRecord& r : contents->records) {
    if (r.ns == kModelNamespace && r.key == kModelKey) {
      bundle.model_onnx = std::move(r.payload);
      has_model = true;
    } else if (r.ns == kManifestNamespace && r.key == bundle.header.manifest_key) {
      bundle.manifest = r.payload;
      has_manifest = true;
      bundle.entries->Insert(std::move(r.ns), std::move(r.key), std::move(r.payload));
    } else if (r.ns == persist::kObjectNamespace) {
      bundle.entries->Insert(std::move(r.ns), std::move(r.key), std::move(r.payload));
    } else {
      return absl::DataLossError(absl::StrCat("bundle ", what, ": unexpected record ", r.ns, "/", r.key));
    }
  }
  if (!has_model || !has_manifest) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": no ", has_model ? "manifest" : "model", " record"));
  }
  return bundle;
}

absl::StatusOr<Bundle> ReadBundle(const std::string& path, const std::string& signing_key) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat("bundle ", bytes.status().message()));
  return DecodeBundleBytes(*bytes, signing_key, path);
}

absl::Status CheckBundleTarget(const BundleHeader& header, const codegen::cpu::HostTarget& host) {
  std::vector<std::string> differences;
  auto compare = [&](const char* what, const std::string& built, const std::string& here) {
    if (built != here) differences.push_back(absl::StrCat(what, " '", built, "' (this process: '", here, "')"));
  };
  compare("compiler", header.target.compiler, host.compiler);
  compare("LLVM", header.target.llvm_version, host.llvm_version);
  compare("target triple", header.target.triple, host.triple);
  compare("CPU", header.target.cpu, host.cpu);
  const std::set<std::string> built = FeatureSet(header.target.features), here = FeatureSet(host.features);
  std::vector<std::string> only_built, only_here;
  std::set_difference(built.begin(), built.end(), here.begin(), here.end(), std::back_inserter(only_built));
  std::set_difference(here.begin(), here.end(), built.begin(), built.end(), std::back_inserter(only_here));
  if (!only_built.empty() || !only_here.empty()) {
    differences.push_back(absl::StrCat("CPU features: the bundle's code assumes ",
                                       only_built.empty() ? "nothing" : absl::StrJoin(only_built, ","),
                                       " where this machine has ",
                                       only_here.empty() ? "nothing else" : absl::StrJoin(only_here, ",")));
  }
  if (differences.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("the bundle was built for other machine code: ",
                                                    absl::StrJoin(differences, "; "),
                                                    ". Compile it again on this machine (shapeshift compile)"));
}

absl::StatusOr<ImportedModel> ImportBundleModel(const Bundle& bundle) {
  return ImportOnnxBytes(bundle.model_onnx, ImportFor(bundle.header), absl::StrCat("bundle ", bundle.path));
}

absl::StatusOr<std::unique_ptr<Session>> OpenBundleSession(const Bundle& bundle, ImportedModel model,
                                                                       const BundleSessionOptions& options) {
  const std::string what = absl::StrCat("bundle ", bundle.path);
  if (absl::Status s = CheckBundleTarget(bundle.header, codegen::cpu::DetectHostTarget()); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", s.message()));
  }
  SessionOptions session_options;
  session_options.compile.vector_width = bundle.header.vector_width;
  session_options.compile.pack_small_row_gemms = bundle.header.pack_small_row_gemms;
  session_options.compile.long_rows_on_panels = bundle.header.long_rows_on_panels;
  session_options.policy = bundle.header.policy;
  session_options.buckets = bundle.header.buckets;
  session_options.tier_up = options.tier_up;
  session_options.recompile_limit = options.recompile_limit;
  session_options.recompile_log = options.recompile_log;
  session_options.cache_dir = options.cache_dir;
  session_options.remote_cache = options.remote_cache;
  session_options.front_store = bundle.entries;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), session_options);
  if (!session.ok()) return absl::Status(session.status().code(), absl::StrCat(what, ": ", session.status().message()));
  const DispatcherStats stats = (*session)->stats().dispatcher;
  if (stats.compiles != 0 || stats.llvm_compiles != 0 || stats.cache_loads < bundle.header.entries) {
    return absl::DataLossError(absl::StrCat(what, ": serving it needed ", stats.compiles, " compile(s) and ",
                                            stats.llvm_compiles, " kernel compile(s); ", stats.cache_loads, " of ",
                                            bundle.header.entries, " entries were re-created from the bundle (its "
                                            "manifest is for model ", bundle.header.manifest_key, ")"));
  }
  return session;
}

}  // namespace shapeshift::runtime::bundle
