#include "graph/onnx/importer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <fstream>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "graph/constant_spill.h"
#include "graph/onnx/cache_dims.h"
#include "graph/onnx/contrib_ops.h"
#include "graph/onnx/exporter.h"
#include "graph/onnx/model_checker.h"
#include "graph/onnx/node_attributes.h"
#include "graph/op_table.h"
#include "graph/shape_inference.h"
#include "graph/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

// Opsets before 7 are accepted because most ops kept their meaning; the few
// that did not (binary ops with the legacy `broadcast`/`axis` attributes)
// are rejected by their shape rules.
constexpr int kMinOpset = 1;
constexpr int kMaxOpset = 18;

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

absl::Status Prefixed(const std::string& what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// Builds one model; `what` prefixes every error.
class Importer {
 public:
  // `in_file`: the model file the message was read from, whose weights
  // ParseOnnxFile left in it.
  Importer(onnx::ModelProto& model, const ImportOptions& options, std::string what,
           const OnnxFile* in_file = nullptr)
      : model_(model), options_(options), what_(std::move(what)), in_file_(in_file) {}

  absl::StatusOr<ImportedModel> Run() {
    if (options_.run_checker) {
      absl::Status checked = CheckOnnxModel(model_, options_.base_dir, &result_.notes);
      if (!checked.ok()) return Error(checked);
    }
    absl::StatusOr<int> opset = DefaultOpset();
    if (!opset.ok()) return Error(opset.status());
    result_.opset = *opset;
    result_.ir_version = model_.ir_version();
    result_.producer = absl::StrCat(model_.producer_name(), model_.producer_version().empty() ? "" : " ",
                                    model_.producer_version());
    result_.env = std::make_unique<ShapeEnv>();
    result_.graph = std::make_unique<Graph>(*opset);
    ExpandOnnxRuntimeFusedOps();
    using Step = absl::Status (Importer::*)();
    for (Step step : {&Importer::CollectRecordedDims, &Importer::CheckSupportedOps, &Importer::AddInitializers}) {
      if (absl::Status s = (this->*step)(); !s.ok()) return Error(s);
    }
    cache_dims_ = CacheLengthDims(model_.graph());
    initializers_ = result_.graph->constants().size();
    const size_t notes_before_inputs = result_.notes.size();
    absl::Status typed = AddTypedGraph();
    if (!typed.ok() && !empty_caches_.empty()) {
      // A node needs a cache dim positive (cache_dims.h): the usual lower
      // bound, and the reason in a note.
      const std::string with_empty_caches(typed.message());
      const std::vector<std::string> empty_caches = std::move(empty_caches_);
      RestartTypedGraph(notes_before_inputs);
      use_cache_defaults_ = false;
      typed = AddTypedGraph();
      if (typed.ok()) {
        for (const std::string& name : empty_caches) {
          result_.notes.push_back(absl::StrCat("dim '", name, "' keeps the default lower bound ", kDefaultDimMin,
                                               " though input '", cache_dims_.at(name).input,
                                               "' is a cache (empty at a first step): with ", name,
                                               " = 0 the import fails: ", with_empty_caches));
        }
      }
    }
    if (!typed.ok()) return Error(typed);
    for (const std::string& name : empty_caches_) {
      const CacheDimSource& source = cache_dims_.at(name);
      result_.notes.push_back(absl::StrCat("dim '", name, "' starts at 0: input '", source.input,
                                           "' is a cache that node '", source.node, "' (Concat) appends to, ",
                                           "empty at a generation's first step"));
    }
    return std::move(result_);
  }

 private:
  absl::Status Error(const absl::Status& s) const { return Prefixed(what_, s); }

  // The inputs, nodes and outputs over the constants: everything that
  // depends on the dims' ranges.
  absl::Status AddTypedGraph() {
    using Step = absl::Status (Importer::*)();
    for (Step step : {&Importer::AddInputs, &Importer::CheckDimFlags, &Importer::AddNodes, &Importer::AddOutputs}) {
      if (absl::Status s = (this->*step)(); !s.ok()) return s;
    }
    return result_.graph->Verify();
  }

  // Back to the state before AddTypedGraph: a new graph holding the same
  // initializers (the tensors are shared, nothing is read again; Constant
  // nodes' values are added again with their nodes), a new env, and the
  // notes taken before the inputs.
  void RestartTypedGraph(size_t notes_before_inputs) {
    auto graph = std::make_unique<Graph>(result_.graph->opset());
    const std::vector<Value*> constants = result_.graph->constants();
    for (size_t i = 0; i < initializers_; ++i) graph->AddConstant(constants[i]->name(), *constants[i]->constant());
    result_.graph = std::move(graph);
    result_.env = std::make_unique<ShapeEnv>();
    result_.notes.resize(notes_before_inputs);
    narrowing_ = DomainNarrowing();
    sum_dims_used_.clear();
    inferred_over_.clear();
  }

  absl::StatusOr<int> DefaultOpset() const {
    for (const onnx::OperatorSetIdProto& id : model_.opset_import()) {
      if (!IsDefaultDomain(id.domain())) continue;
      if (id.version() < kMinOpset || id.version() > kMaxOpset) {
        return absl::UnimplementedError(absl::StrCat("default-domain opset ", id.version(),
                                                     " is not supported (supported: ", kMinOpset, "..",
                                                     kMaxOpset, ")"));
      }
      return static_cast<int>(id.version());
    }
    return absl::InvalidArgumentError("the model imports no default-domain (ai.onnx) opset");
  }

  // ONNX Runtime's fused ops (contrib_ops.h) as the default-domain ops they
  // fuse, with a note saying which.
  void ExpandOnnxRuntimeFusedOps() {
    std::map<std::string, int> expanded = ExpandContribOps(*model_.mutable_graph(), result_.opset);
    if (expanded.empty()) return;
    std::vector<std::string> counts;
    for (const auto& [op, count] : expanded) counts.push_back(absl::StrCat(count, " ", op));
    result_.notes.push_back(absl::StrCat("ONNX Runtime's fused ops expanded into the default-domain ops they fuse ",
                                         "(com.microsoft: ", absl::StrJoin(counts, ", "), ")"));
  }

  // Every unsupported op, listed once in a single error.
  absl::Status CheckSupportedOps() {
    std::vector<std::string> problems;
    for (const onnx::NodeProto& node : model_.graph().node()) {
      if (!IsDefaultDomain(node.domain())) {
        problems.push_back(absl::StrCat("'", node.domain(), "::", node.op_type(), "' (node '", node.name(),
                                        "', custom domain)"));
      } else if (FindOp(node.op_type()) == nullptr) {
        problems.push_back(absl::StrCat("'", node.op_type(), "' (node '", node.name(), "', opset ",
                                        result_.opset, ")"));
      }
    }
    if (problems.empty()) return absl::OkStatus();
    return absl::UnimplementedError(absl::StrCat(problems.size(), " unsupported op(s): ",
                                                 absl::StrJoin(problems, ", ")));
  }

  absl::Status AddInitializers() {
    int index = 0;
    size_t next_in_file = 0;
    for (onnx::TensorProto& init : *model_.mutable_graph()->mutable_initializer()) {
      const std::string what = absl::StrCat("initializer '", init.name(), "'");
      // Where ParseOnnxFile left this one's bytes: the file it holds open,
      // not the external data's location (which a symlinked model file, as in
      // a Hugging Face cache, would resolve outside the model's directory).
      std::optional<RawBytes> in_file;
      if (in_file_ != nullptr && next_in_file < in_file_->weights.size() &&
          in_file_->weights[next_in_file].index == index) {
        const WeightInFile& weight = in_file_->weights[next_in_file++];
        if (weight.name == init.name()) {
          in_file = RawBytes{.fd = in_file_->fd->get(), .offset = weight.offset,
                             .size = static_cast<size_t>(weight.size), .file = in_file_->path};
        }
      }
      ++index;
      absl::StatusOr<Tensor> t = TensorFromProto(
          init, options_.base_dir, what,
          [&](DType dtype, const std::vector<int64_t>& shape, const RawBytes& bytes) {
            return SpilledOrInMemory(dtype, shape, bytes, what);
          },
          in_file ? &*in_file : nullptr);
      if (!t.ok()) return t.status();
      if (result_.graph->FindValue(init.name()) != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("initializer '", init.name(), "' is defined twice"));
      }
      result_.graph->AddConstant(init.name(), *std::move(t));
      // The tensor now holds the data: the message's copy is released as we
      // go, so a model's weights are never held twice during import.
      std::string().swap(*init.mutable_raw_data());
      init.clear_float_data();
      init.clear_int64_data();
      init.clear_int32_data();
      init.clear_double_data();
    }
    return absl::OkStatus();
  }

  // A raw initializer: written to the spill file when large; nullopt keeps
  // it in memory (a bias, a norm's scale). A write that fails (a full disk)
  // keeps this and every later initializer in memory, with a note: an
  // import never fails for want of a disk.
  // An external initializer goes file to file (ConstantSpill::SpillFromFile).
  absl::StatusOr<std::optional<Tensor>> SpilledOrInMemory(DType dtype, const std::vector<int64_t>& shape,
                                                          const RawBytes& bytes, const std::string& what) {
    if (options_.spill == nullptr || bytes.size < kSpillMinBytes || spill_failed_) return std::nullopt;
    absl::StatusOr<Tensor> spilled =
        bytes.memory != nullptr
            ? options_.spill->SpillBytes(dtype, shape, bytes.memory->data(), bytes.size)
            : options_.spill->SpillFromFile(dtype, shape, bytes.fd, bytes.offset, bytes.size);
    if (!spilled.ok()) {
      spill_failed_ = true;
      result_.notes.push_back(
          absl::StrCat("weights from ", what, " on kept in memory: ", spilled.status().message()));
      return std::nullopt;
    }
    return std::optional<Tensor>(*std::move(spilled));
  }

  absl::StatusOr<SymExpr> DimFromProto(const onnx::TensorShapeProto::Dimension& dim, const std::string& input) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", input, "' has a negative dimension ", dim.dim_value()));
      }
      return SymExpr(dim.dim_value());
    }
    if (dim.has_dim_param() && !dim.dim_param().empty()) {
      const std::string& name = dim.dim_param();
      auto sum = dim_sums_.find(name);
      if (sum == dim_sums_.end()) return NamedSymbol(name, input);
      SymExpr total = 0;
      for (const std::string& part : sum->second) {
        if (dim_sums_.contains(part)) {
          return absl::InvalidArgumentError(absl::StrCat("--dim ", name, ": '", part, "' is itself a sum"));
        }
        absl::StatusOr<SymExpr> s = NamedSymbol(part, input);
        if (!s.ok()) return s.status();
        total += *s;
      }
      sum_dims_used_.insert(name);
      return total;
    }
    return result_.env->FreshSymbol("unk", kDefaultDimMin, kDefaultDimMax);
  }

  // The symbol for dim_param `name` (declared with its --dim range on first use).
  absl::StatusOr<SymExpr> NamedSymbol(const std::string& name, const std::string& input) {
    ShapeEnv& env = *result_.env;
    if (env.HasSymbol(name)) return SymExpr::Symbol(name);
    SymbolInfo info;
    info.name = name;
    auto it = dim_ranges_.find(name);
    info.min = it != dim_ranges_.end() ? it->second.min : kDefaultDimMin;
    if (it == dim_ranges_.end() && use_cache_defaults_ && cache_dims_.contains(name)) {
      info.min = 0;  // a cache's length: empty at a generation's first step (cache_dims.h)
      empty_caches_.push_back(name);
    }
    info.max = it != dim_ranges_.end() ? it->second.max : kDefaultDimMax;
    absl::StatusOr<SymExpr> s = env.DeclareSymbol(info);
    if (!s.ok()) return Prefixed(absl::StrCat("dim '", name, "' of input '", input, "'"), s.status());
    (it != dim_ranges_.end() ? narrowing_.declared : narrowing_.undeclared).insert(name);
    return *s;
  }

  absl::Status AddInputs() {
    for (const onnx::ValueInfoProto& in : model_.graph().input()) {
      if (result_.graph->FindValue(in.name()) != nullptr) continue;  // an initializer (IR < 4 style)
      if (!in.type().has_tensor_type()) {
        return absl::UnimplementedError(absl::StrCat("input '", in.name(), "' is not a tensor"));
      }
      const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
      std::optional<DType> dtype = DTypeFromOnnx(tt.elem_type());
      if (!dtype) {
        return absl::UnimplementedError(absl::StrCat("input '", in.name(), "' has unsupported element type ",
                                                     onnx::TensorProto::DataType_Name(
                                                         static_cast<onnx::TensorProto::DataType>(tt.elem_type()))));
      }
      if (!tt.has_shape()) {
        return absl::InvalidArgumentError(absl::StrCat("input '", in.name(), "' has no shape (unknown rank)"));
      }
      std::vector<SymExpr> shape;
      for (const auto& dim : tt.shape().dim()) {
        absl::StatusOr<SymExpr> d = DimFromProto(dim, in.name());
        if (!d.ok()) return d.status();
        shape.push_back(*d);
      }
      result_.graph->AddInput(in.name(), TensorType(*dtype, std::move(shape)));
    }
    return absl::OkStatus();
  }

  // A --dim for a name the model never mentions is almost certainly a typo.
  absl::Status CheckDimFlags() {
    std::vector<std::string> declared;
    for (const auto& [name, range] : options_.dim_ranges) declared.push_back(name);
    for (const auto& [name, parts] : options_.dim_sums) declared.push_back(name);  // recorded ones may go unused
    for (const std::string& name : declared) {
      if (result_.env->HasSymbol(name) || sum_dims_used_.contains(name)) continue;
      std::vector<std::string> known;
      for (const SymbolInfo& s : result_.env->symbols()) known.push_back(s.name);
      for (const std::string& s : sum_dims_used_) known.push_back(s);
      return absl::InvalidArgumentError(absl::StrCat("declared dim '", name,
                                                     "' is not a dynamic dim of the model's inputs (they are: ",
                                                     known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status AddNodes() {
    Graph& g = *result_.graph;
    inferred_over_ = Domain();
    for (const onnx::NodeProto& proto : model_.graph().node()) {
      std::vector<Value*> inputs;
      for (const std::string& name : proto.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        Value* v = g.FindValue(name);
        if (v == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("node '", proto.name(), "' (", proto.op_type(),
                                                         ") reads '", name, "', which is not defined before it"));
        }
        inputs.push_back(v);
      }
      for (const std::string& name : proto.output()) {
        if (!name.empty() && g.FindValue(name) != nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("node '", proto.name(), "' redefines value '", name, "'"));
        }
      }
      absl::StatusOr<Attributes> attrs = AttributesFromNode(proto, options_.base_dir);
      if (!attrs.ok()) return attrs.status();
      if (proto.op_type() == "Constant" && attrs->Has("value") && proto.output_size() == 1) {
        // A Constant holding a tensor becomes a graph constant, so passes see
        // one kind of constant; the value keeps the node output's name.
        absl::StatusOr<Tensor> value = attrs->GetTensor("value");
        if (!value.ok()) return value.status();
        g.AddConstant(proto.output(0), *std::move(value));
        continue;
      }
      std::vector<std::string> outputs(proto.output().begin(), proto.output().end());
      Node* node = g.AddNode(proto.op_type(), std::move(inputs), static_cast<int>(outputs.size()),
                             *std::move(attrs), proto.name(), outputs);
      absl::Status s = InferNode(*node, *result_.env, g.opset(), &narrowing_);
      // A question the nodes before a narrowing left stale (GPT-Neo's
      // min(512, sequence), taken before its position Gather limited
      // sequence to 512) is asked again over the narrowed domain.
      if (!s.ok() && Domain() != inferred_over_) s = InferAgainOverTheNarrowedDomain();
      if (!s.ok()) return s;
    }
    if (Domain() != inferred_over_) {
      if (absl::Status s = InferAgainOverTheNarrowedDomain(); !s.ok()) return s;
    }
    for (std::string& note : narrowing_.notes) result_.notes.push_back(std::move(note));
    return absl::OkStatus();
  }

  // Shape inference again over every node added so far, until no node
  // narrows a dim further. The nodes inferred before a narrowing computed
  // their dims over the wider range (a Min(512, sequence) that the narrowed
  // range collapses to sequence); inferred again, every dim is as simple as
  // the domain the model can serve allows. Each round narrows or stops, and
  // a narrowing only shrinks ranges, so this ends (a few rounds at most).
  absl::Status InferAgainOverTheNarrowedDomain() {
    Graph& g = *result_.graph;
    for (int round = 0; round < kMaxInferenceRounds && Domain() != inferred_over_; ++round) {
      inferred_over_ = Domain();
      for (Node* node : g.nodes()) {
        if (absl::Status s = InferNode(*node, *result_.env, g.opset(), &narrowing_); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // The ranges of the dims shape inference may narrow (the undeclared input
  // dims) and the number of relations between dims: what it assumed about
  // them. Data-dependent dims it creates on the way do not count.
  std::vector<std::pair<int64_t, int64_t>> Domain() const {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const std::string& name : narrowing_.undeclared) {
      const SymbolInfo* s = result_.env->FindSymbol(name);
      if (s != nullptr) ranges.emplace_back(s->min, s->max);
    }
    // A relation between dims narrows the domain too.
    ranges.emplace_back(static_cast<int64_t>(result_.env->domain_constraints().size()), 0);
    return ranges;
  }

  absl::Status AddOutputs() {
    Graph& g = *result_.graph;
    for (const onnx::ValueInfoProto& out : model_.graph().output()) {
      Value* v = g.FindValue(out.name());
      if (v == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name(), "' is never defined"));
      }
      if (out.type().has_tensor_type()) {
        const onnx::TypeProto::Tensor& tt = out.type().tensor_type();
        std::optional<DType> declared = DTypeFromOnnx(tt.elem_type());
        if (tt.elem_type() != 0 && declared && *declared != v->type().dtype) {
          return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name(), "' is declared ",
                                                         DTypeName(*declared), " but computes ",
                                                         v->type().ToString()));
        }
        if (tt.has_shape() && tt.shape().dim_size() != v->type().rank()) {
          return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name(), "' is declared with rank ",
                                                         tt.shape().dim_size(), " but computes ",
                                                         v->type().ToString()));
        }
        // Declared fixed sizes must match; declared names are documentation
        // (exporters invent names like `Addlast_hidden_state_dim_1`).
        for (int d = 0; tt.has_shape() && d < tt.shape().dim_size(); ++d) {
          const auto& dim = tt.shape().dim(d);
          std::optional<int64_t> computed = v->type().shape[d].AsConst();
          if (dim.has_dim_value() && computed && *computed != dim.dim_value()) {
            return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name(), "' dim ", d,
                                                           " is declared ", dim.dim_value(), " but computes ",
                                                           v->type().ToString()));
          }
        }
      }
      g.AddOutput(v);
    }
    return absl::OkStatus();
  }

  onnx::ModelProto& model_;
  const ImportOptions& options_;
  bool spill_failed_ = false;  // a spill write failed: the rest stays in memory
  std::string what_;
  const OnnxFile* in_file_ = nullptr;
  // The dims recorded in the model's metadata (`shapeshift.dim.<name>` =
  // `lo..hi` written by our exporter, or `a+b` written by
  // bench/peers/export_models.py for GPT-2's total_sequence), each overridden
  // by the caller's own declaration of that dim — except that a recorded sum
  // cannot be declared a range of its own: that would make the dim free, so
  // inputs breaking the model's contract (a mask longer than past + new
  // tokens) would only fail later, deep in lowering, with an unrelated error.
  absl::Status CollectRecordedDims() {
    dim_ranges_ = options_.dim_ranges;
    dim_sums_ = options_.dim_sums;
    absl::StatusOr<ImportOptions> recorded = ReadRecordedDims(model_);
    if (!recorded.ok()) return recorded.status();
    for (const auto& [name, terms] : recorded->dim_sums) {
      auto declared = options_.dim_ranges.find(name);
      if (declared == options_.dim_ranges.end()) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim ", name, "=", declared->second.min, "..", declared->second.max, ": the model derives ", name,
          " = ", absl::StrJoin(terms, " + "), " (its metadata shapeshift.dim.", name, "), so ", name,
          " has no range of its own; declare ", absl::StrJoin(terms, " and "), " instead"));
    }
    for (const auto& [name, range] : recorded->dim_ranges) {
      if (options_.dim_ranges.contains(name) || options_.dim_sums.contains(name)) continue;
      dim_ranges_.emplace(name, range);
    }
    for (const auto& [name, terms] : recorded->dim_sums) {
      if (options_.dim_ranges.contains(name) || options_.dim_sums.contains(name)) continue;
      dim_sums_.emplace(name, terms);
    }
    return absl::OkStatus();
  }

  ImportedModel result_;
  std::map<std::string, DimRange> dim_ranges_;
  std::map<std::string, std::vector<std::string>> dim_sums_;
  absl::flat_hash_set<std::string> sum_dims_used_;  // dim_sums_ names some input has
  // The inputs' cache-length dims (cache_dims.h); undeclared ones default to
  // 0..kDefaultDimMax while use_cache_defaults_, and are listed in
  // empty_caches_ when they do.
  std::map<std::string, CacheDimSource> cache_dims_;
  bool use_cache_defaults_ = true;
  std::vector<std::string> empty_caches_;
  size_t initializers_ = 0;  // the graph's first constants: the initializers
  // Which named input dims have declared ranges; shape inference narrows
  // the others where the model implies a limit (shape_inference.h).
  DomainNarrowing narrowing_;
  // The domain every node was last inferred over (Domain()); empty until AddNodes.
  std::vector<std::pair<int64_t, int64_t>> inferred_over_;
  static constexpr int kMaxInferenceRounds = 4;
};

absl::Status NotAModel(const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": not a valid ONNX model (protobuf parsing failed; truncated or not a model file)"));
}

absl::StatusOr<ImportedModel> ImportParsed(onnx::ModelProto& model, const ImportOptions& options,
                                           const std::string& what, const OnnxFile* in_file = nullptr) {
  if (!model.has_graph()) return absl::InvalidArgumentError(absl::StrCat(what, ": the model has no graph"));
  return Importer(model, options, what, in_file).Run();
}

}  // namespace

absl::StatusOr<ImportedModel> ImportOnnxBytes(const std::string& bytes, const ImportOptions& options,
                                              const std::string& what) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) return NotAModel(what);
  return ImportParsed(model, options, what);
}

absl::StatusOr<ImportedModel> ImportParsedOnnx(onnx::ModelProto& model, const ImportOptions& options,
                                               const std::string& what) {
  return ImportParsed(model, options, what);
}

OnnxFile::OnnxFile() = default;
OnnxFile::~OnnxFile() = default;
OnnxFile::OnnxFile(OnnxFile&&) noexcept = default;
OnnxFile& OnnxFile::operator=(OnnxFile&&) noexcept = default;

namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The message of the regular file open as `fd`, its large weights left in
// the file; false where the rewrite declined (weights_left_in_file.h) or the
// file cannot be mapped.
bool ParseLeavingWeightsInFile(const std::string& path, std::shared_ptr<const FileDescriptor> fd, OnnxFile* file) {
  struct stat st {};
  if (fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return false;
  const auto size = static_cast<size_t>(st.st_size);
  void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd->get(), 0);
  if (mapped == MAP_FAILED) return false;
  const size_t slash = path.find_last_of('/');
  const std::string location = slash == std::string::npos ? path : path.substr(slash + 1);
  std::optional<ModelWithoutWeights> lean =
      LeaveWeightsInFile(std::string_view(static_cast<const char*>(mapped), size), location, kSpillMinBytes);
  munmap(mapped, size);
  if (!lean || !file->model->ParseFromString(lean->message)) {
    file->model->Clear();
    return false;
  }
  file->weights = std::move(lean->weights);
  file->fd = std::move(fd);
  return true;
}

}  // namespace

absl::StatusOr<OnnxFile> ParseOnnxFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not an ONNX model file"));
  }
  OnnxFile file;
  file.path = path;
  file.model = std::make_unique<onnx::ModelProto>();
  // O_NONBLOCK: a FIFO is not waited on here (the stream below reads it).
  if (const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
    if (ParseLeavingWeightsInFile(path, std::make_shared<const FileDescriptor>(fd), &file)) return file;
  }
  // Otherwise the whole file through the parser: a model without large raw
  // weights, or bytes the rewrite declined (the parser says what is wrong).
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return absl::NotFoundError(absl::StrCat(path, ": cannot open the model file"));
  // Parsed straight from the stream: a model is not held twice (file bytes
  // and message) while its initializers become tensors.
  if (stream.peek() == std::ifstream::traits_type::eof() || !file.model->ParseFromIstream(&stream)) {
    return NotAModel(path);
  }
  return file;
}

absl::StatusOr<ImportedModel> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  if (!file.ok()) return file.status();
  return ImportParsedOnnxFile(*file, options);
}

absl::StatusOr<ImportedModel> ImportParsedOnnxFile(OnnxFile& file, const ImportOptions& options) {
  ImportOptions with_dir = options;
  if (with_dir.base_dir.empty()) with_dir.base_dir = DirectoryOf(file.path);
  return ImportParsed(*file.model, with_dir, file.path, &file);
}

absl::Status ParseDimFlag(const std::string& flag, ImportOptions* options) {
  std::vector<std::string> name_range = absl::StrSplit(flag, absl::MaxSplits('=', 1));
  if (name_range.size() == 2 && !name_range[0].empty() && !absl::StrContains(name_range[1], "..")) {
    std::vector<std::string> parts = absl::StrSplit(name_range[1], '+');
    for (std::string& part : parts) {
      part = std::string(absl::StripAsciiWhitespace(part));
      if (part.empty() || part == name_range[0]) {
        return absl::InvalidArgumentError(absl::StrCat("--dim '", flag, "': expected name=lo..hi or name=a+b"));
      }
    }
    options->dim_sums[name_range[0]] = parts;
    return absl::OkStatus();
  }
  return ParseDimRangeFlag(flag, options);
}

absl::Status ParseDimRangeFlag(const std::string& flag, ImportOptions* options) {
  std::vector<std::string> name_range = absl::StrSplit(flag, absl::MaxSplits('=', 1));
  if (name_range.size() != 2 || name_range[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--dim '", flag, "': expected name=lo..hi"));
  }
  std::vector<std::string> bounds = absl::StrSplit(name_range[1], absl::MaxSplits("..", 1));
  DimRange range;
  if (bounds.size() != 2 || !absl::SimpleAtoi(bounds[0], &range.min) ||
      !absl::SimpleAtoi(bounds[1], &range.max)) {
    return absl::InvalidArgumentError(absl::StrCat("--dim '", flag, "': expected name=lo..hi with integers"));
  }
  if (range.min < 0 || range.min > range.max) {
    return absl::InvalidArgumentError(absl::StrCat("--dim '", flag, "': need 0 <= lo <= hi"));
  }
  options->dim_ranges[name_range[0]] = range;
  return absl::OkStatus();
}

}  // namespace shapeshift
