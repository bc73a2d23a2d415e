#include "runtime/bundle/bundle.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "base/file_descriptor.h"
#include "graph/constant_spill.h"
#include "graph/onnx/exporter.h"
#include "onnx/onnx_pb.h"
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

// The location the model record's initializers name: a placeholder for
// "the weights record", which whoever imports the record replaces with the
// file the record is in (AimAtWeights).
constexpr char kWeightsLocation[] = "bundle-weights-record";
// Each initializer's bytes start at a multiple of this in the record.
constexpr uint64_t kWeightsAlignment = 64;

// Points every initializer of `model` at `location` (a file name) with
// `base` added to its offset, after checking that each one is external
// data of the weights record within its `size` bytes: a model record naming
// any other file, or bytes past the record, is damage (DataLoss, naming it).
absl::Status AimAtWeights(onnx::ModelProto& model, const std::string& location, uint64_t base, uint64_t size,
                          absl::string_view what) {
  for (onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer()) {
    auto damaged = [&](absl::string_view why) {
      return absl::DataLossError(absl::StrCat(what, ": initializer '", init.name(), "' ", why));
    };
    if (init.data_location() != onnx::TensorProto::EXTERNAL) return damaged("is not in the weights record");
    uint64_t offset = 0, length = 0;
    bool located = false, has_length = false;
    for (onnx::StringStringEntryProto& entry : *init.mutable_external_data()) {
      if (entry.key() == "location") {
        if (entry.value() != kWeightsLocation) return damaged(absl::StrCat("names the file '", entry.value(), "'"));
        entry.set_value(location);
        located = true;
      } else if (entry.key() == "offset" && absl::SimpleAtoi(entry.value(), &offset)) {
        continue;
      } else if (entry.key() == "length" && absl::SimpleAtoi(entry.value(), &length)) {
        has_length = true;  // without one the importer would read to the end of the file
      } else {
        return damaged(absl::StrCat("has external data ", entry.key(), " '", entry.value(), "'"));
      }
    }
    if (!located || !has_length) return damaged("names no location or no length in the weights record");
    if (offset > size || length > size - offset) {
      return damaged(absl::StrCat("lies at [", offset, ", +", length, ") outside the ", size, "-byte weights record"));
    }
    for (onnx::StringStringEntryProto& entry : *init.mutable_external_data()) {
      if (entry.key() == "offset") entry.set_value(absl::StrCat(offset + base));
    }
  }
  return absl::OkStatus();
}

// The file a bundle's weights are exported to before the bundle exists:
// beside it (same file system), removed with this object.
class WeightsFile {
 public:
  static absl::StatusOr<std::unique_ptr<WeightsFile>> Create(const std::string& bundle_path) {
    static std::atomic<uint64_t> next{0};
    const std::filesystem::path p(bundle_path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const std::string name = absl::StrCat(p.filename().string(), ".weights.", getpid(), ".", next++);
    const std::string path = absl::StrCat(dir, "/", name);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::UnavailableError(
          absl::StrCat("'", path, "' (the weights on their way into the bundle): cannot be created: ",
                       std::strerror(errno)));
    }
    return std::unique_ptr<WeightsFile>(new WeightsFile(dir, name, path, fd));
  }
  ~WeightsFile() { unlink(path_.c_str()); }

  // Appends the tensor's bytes at the next aligned offset, returning it.
  absl::StatusOr<int64_t> Write(const Tensor& t) {
    const uint64_t at = (size_ + kWeightsAlignment - 1) / kWeightsAlignment * kWeightsAlignment;
    if (!PwriteFully(fd_.get(), t.raw(), t.byte_size(), static_cast<int64_t>(at))) {
      return absl::UnavailableError(absl::StrCat("'", path_, "': write failed: ", std::strerror(errno)));
    }
    size_ = at + t.byte_size();
    return static_cast<int64_t>(at);
  }

  const std::string& dir() const { return dir_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }

 private:
  WeightsFile(std::string dir, std::string name, std::string path, int fd)
      : dir_(std::move(dir)), name_(std::move(name)), path_(std::move(path)), fd_(fd) {}
  std::string dir_, name_, path_;
  FileDescriptor fd_;
  uint64_t size_ = 0;
};

// The model record imported with its initializers read from `location` in
// `dir`, the weights record starting at `base` there.
absl::StatusOr<ImportedModel> ImportModelRecord(const std::string& model_onnx, const BundleHeader& header,
                                                const std::string& dir, const std::string& location,
                                                const PayloadInFile& weights, ConstantSpill* spill,
                                                const std::string& what) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model_onnx)) return absl::DataLossError(absl::StrCat(what, ": the model record is not an ONNX model"));
  if (absl::Status s = AimAtWeights(proto, location, weights.offset, weights.size, what); !s.ok()) return s;
  ImportOptions options = ImportFor(header);
  options.base_dir = dir;
  options.spill = spill;
  return ImportParsedOnnx(proto, options, what);
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
  // The bundle carries the model as ONNX, its weights in a record of their
  // own; compiling from the re-imported record makes the graph (and so the
  // manifest key) exactly what a loader will import.
  absl::StatusOr<std::unique_ptr<WeightsFile>> weights = WeightsFile::Create(path);
  if (!weights.ok()) return weights.status();
  ExportOptions export_options;
  export_options.external_data = ExternalDataSink{(*weights)->dir(), (*weights)->name(), 0,
                                                  [&](const Tensor& t) { return (*weights)->Write(t); }};
  onnx::ModelProto exported;
  if (absl::Status s = ExportOnnxModel(*model.graph, *model.env, export_options, &exported); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("exporting the model: ", s.message()));
  }
  BundleHeader header;
  header.source = options.source;
  header.target = codegen::cpu::DetectHostTarget();
  header.policy = options.policy;
  header.buckets = options.buckets;
  header.vector_width = options.compile.vector_width;
  header.pack_small_row_gemms = options.compile.pack_small_row_gemms;
  header.long_rows_on_panels = options.compile.long_rows_on_panels;
  for (const SymbolInfo& s : model.env->symbols()) header.domain[s.name] = DimRange{s.min, s.max};
  model = ImportedModel{};  // the weights are in the file now
  for (onnx::TensorProto& init : *exported.mutable_graph()->mutable_initializer()) {
    for (onnx::StringStringEntryProto& entry : *init.mutable_external_data()) {
      if (entry.key() == "location") entry.set_value(kWeightsLocation);
    }
  }
  std::string model_onnx;
  if (!exported.SerializeToString(&model_onnx)) {
    return absl::InternalError("the exported model (without its weights) cannot be serialized");
  }
  exported.Clear();
  const PayloadInFile weights_record{(*weights)->fd(), 0, (*weights)->size()};
  // Re-imported file to file into a spill beside the bundle where the file
  // system takes one (not tmpfs): the compile then packs from file pages
  // and gives them back, as `run --weights-dir` does.
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny((*weights)->dir());
  absl::StatusOr<ImportedModel> reimported = ImportModelRecord(
      model_onnx, header, (*weights)->dir(), (*weights)->name(), weights_record, spill.get(), "the exported model");
  spill.reset();
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
  contents.records.push_back({std::string(kModelNamespace), std::string(kModelKey), std::move(model_onnx), {}});
  contents.records.push_back({std::string(kWeightsNamespace), std::string(kWeightsKey), "", weights_record});
  contents.records.push_back({std::string(kManifestNamespace), header.manifest_key,
                              EncodeManifest(header.manifest_key, cache.entries()), {}});
  for (auto& [ns_key, payload] : collected->Entries()) {
    if (ns_key.first != persist::kObjectNamespace) continue;
    contents.records.push_back({ns_key.first, ns_key.second, payload, {}});
    ++header.objects;
  }
  contents.header = HeaderToJson(header);
  if (absl::Status s = WriteBundleFile(path, contents, options.signing_key); !s.ok()) return s;
  absl::StatusOr<FileIdentity> written = IdentityOf(path);
  if (!written.ok()) return written.status();
  BundleSummary summary;
  summary.header = std::move(header);
  summary.compiles = (*session)->stats().dispatcher.compiles;
  summary.bytes = written->size;
  return summary;
}

absl::StatusOr<Bundle> ReadBundle(const std::string& path, const std::string& signing_key) {
  absl::StatusOr<BundleContents> contents = ReadBundleFile(path, signing_key, kWeightsNamespace);
  if (!contents.ok()) return contents.status();
  const std::string& what = path;
  absl::StatusOr<BundleHeader> header = HeaderFromJson(contents->header);
  if (!header.ok()) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": ", header.status().message()));
  }
  Bundle bundle;
  bundle.path = path;
  bundle.header = *std::move(header);
  bundle.file = *contents->file;
  bundle.entries = std::make_shared<persist::MemoryEntryStore>(absl::StrCat("bundle ", what), /*read_only=*/true);
  bool has_model = false, has_weights = false, has_manifest = false;
  for (BundleRecord& r : contents->records) {
    if (r.ns == kModelNamespace && r.key == kModelKey && !has_model) {
      bundle.model_onnx = std::move(r.payload);
      has_model = true;
    } else if (r.ns == kWeightsNamespace && r.key == kWeightsKey && !has_weights) {
      bundle.weights = *r.in_file;
      has_weights = true;
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
  if (!has_model || !has_weights || !has_manifest) {
    return absl::DataLossError(absl::StrCat("bundle ", what, ": no ",
                                            !has_model ? "model" : !has_weights ? "weights" : "manifest", " record"));
  }
  return bundle;
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

absl::StatusOr<ImportedModel> ImportBundleModel(const Bundle& bundle, ConstantSpill* spill) {
  const std::string what = absl::StrCat("bundle ", bundle.path);
  // The weights are read by name from the file's own directory: a link to
  // the bundle is followed first (the importer keeps external data inside
  // the model's directory).
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(bundle.path, error);
  if (error) return absl::NotFoundError(absl::StrCat(what, ": ", error.message()));
  absl::StatusOr<ImportedModel> model = ImportModelRecord(bundle.model_onnx, bundle.header,
                                                          file.parent_path().string(), file.filename().string(),
                                                          bundle.weights, spill, what);
  if (!model.ok()) return model;
  absl::StatusOr<FileIdentity> now = IdentityOf(file.string());
  if (!now.ok() || !(*now == bundle.file)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the file changed after its checksum was verified (replaced or rewritten while it loaded); "
              "its weights are not used: load it again"));
  }
  return model;
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
  session_options.weights_dir = options.weights_dir;
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
