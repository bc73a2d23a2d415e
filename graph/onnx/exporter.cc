#include "graph/onnx/exporter.h"

#include <fstream>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "graph/onnx/model_checker.h"
#include "graph/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

// IR version 8 is the one ONNX 1.12 writes for opsets up to 17.
constexpr int64_t kIrVersion = 8;

void SetAttribute(const std::string& name, const AttrValue& value, onnx::AttributeProto* a) {
  a->set_name(name);
  if (const auto* i = std::get_if<int64_t>(&value)) {
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(*i);
  } else if (const auto* f = std::get_if<float>(&value)) {
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(*f);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(*s);
  } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : *ints) a->add_ints(v);
  } else if (const auto* floats = std::get_if<std::vector<float>>(&value)) {
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float v : *floats) a->add_floats(v);
  } else if (const auto* strings = std::get_if<std::vector<std::string>>(&value)) {
    a->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& v : *strings) a->add_strings(v);
  } else {
    a->set_type(onnx::AttributeProto::TENSOR);
    TensorToProto(std::get<Tensor>(value), "", a->mutable_t());
  }
}

// The derived dims of the graph's inputs, by the names they are written
// under: an input dim that is a sum of symbols (GPT-2 with past's mask,
// `past_sequence + sequence`) is a dim_param of its own, recorded as
// `shapeshift.dim.<name>` = `a+b` — the form the importer reads back as that
// sum (a dim_param must be a name, and torch's exports record such dims the
// same way).
struct DerivedDims {
  absl::flat_hash_map<SymExpr, std::string> name_of;
  std::vector<std::pair<std::string, std::string>> metadata;  // name, "a+b"
};

absl::StatusOr<DerivedDims> NameDerivedInputDims(const Graph& graph, const ShapeEnv& env) {
  DerivedDims out;
  for (const Value* v : graph.inputs()) {
    for (size_t k = 0; k < v->type().shape.size(); ++k) {
      const SymExpr& dim = v->type().shape[k];
      if (dim.IsConst() || dim.IsSymbol() || out.name_of.contains(dim)) continue;
      std::vector<std::string> terms;
      for (const SymExpr& t : dim.kind() == ExprKind::kAdd ? dim.operands() : absl::Span<const SymExpr>()) {
        if (t.IsSymbol()) terms.push_back(t.symbol_name());
      }
      if (terms.empty() || terms.size() != dim.operands().size()) {
        return absl::InvalidArgumentError(absl::StrCat("input '", v->name(), "' dim ", k, " is ", dim.ToString(),
                                                       ": ONNX declares an input dim by a name, and only a sum of "
                                                       "dims can be recorded for one"));
      }
      std::string name = absl::StrJoin(terms, "_plus_");
      while (env.HasSymbol(name)) name += "_";
      out.name_of[dim] = name;
      out.metadata.emplace_back(name, absl::StrJoin(terms, "+"));
    }
  }
  return out;
}

// A value's type as value_info: symbols by name, derived input dims by
// their recorded names, other derived dims (outputs only) by their text,
// which importers read as documentation.
void SetValueInfo(const Value& v, const DerivedDims& derived, onnx::ValueInfoProto* info) {
  info->set_name(v.name());
  onnx::TypeProto::Tensor* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(DTypeToOnnx(v.type().dtype));
  onnx::TensorShapeProto* shape = tt->mutable_shape();
  for (const SymExpr& dim : v.type().shape) {
    onnx::TensorShapeProto::Dimension* d = shape->add_dim();
    if (std::optional<int64_t> c = dim.AsConst()) {
      d->set_dim_value(*c);
    } else if (dim.IsSymbol()) {
      d->set_dim_param(dim.symbol_name());
    } else if (auto it = derived.name_of.find(dim); it != derived.name_of.end()) {
      d->set_dim_param(it->second);
    } else {
      d->set_dim_param(dim.ToString());
    }
  }
}

}  // namespace

absl::Status ExportOnnxModel(const Graph& graph, const ShapeEnv& env, const ExportOptions& options,
                             onnx::ModelProto* model) {
  model->Clear();
  model->set_ir_version(kIrVersion);
  model->set_producer_name(options.producer_name);
  onnx::OperatorSetIdProto* opset = model->add_opset_import();
  opset->set_domain("");
  opset->set_version(graph.opset());
  for (const SymbolInfo& s : env.symbols()) {
    onnx::StringStringEntryProto* entry = model->add_metadata_props();
    entry->set_key(absl::StrCat(kDimRangeMetadataPrefix, s.name));
    entry->set_value(absl::StrCat(s.min, "..", s.max));
  }
  absl::StatusOr<DerivedDims> derived = NameDerivedInputDims(graph, env);
  if (!derived.ok()) return derived.status();
  for (const auto& [name, sum] : derived->metadata) {
    onnx::StringStringEntryProto* entry = model->add_metadata_props();
    entry->set_key(absl::StrCat(kDimRangeMetadataPrefix, name));
    entry->set_value(sum);
  }

  onnx::GraphProto* g = model->mutable_graph();
  g->set_name(options.graph_name);
  for (const Value* v : graph.inputs()) SetValueInfo(*v, *derived, g->add_input());
  for (const Value* v : graph.constants()) {
    const Tensor& t = *v->constant();
    const std::optional<ExternalDataSink>& sink = options.external_data;
    if (!sink.has_value() || t.byte_size() < sink->min_bytes) {
      TensorToProto(t, v->name(), g->add_initializer());
      continue;
    }
    absl::StatusOr<int64_t> offset = sink->write(t);
    if (!offset.ok()) {
      return absl::Status(offset.status().code(),
                          absl::StrCat("writing initializer '", v->name(), "' to ", sink->location, ": ",
                                       offset.status().message()));
    }
    TensorToExternalProto(t, v->name(), sink->location, *offset, g->add_initializer());
  }
  for (const Node* node : graph.nodes()) {
    onnx::NodeProto* n = g->add_node();
    n->set_name(node->name());
    n->set_op_type(node->op_type());
    for (const Value* in : node->inputs()) n->add_input(in == nullptr ? "" : in->name());
    for (const Value* out : node->outputs()) n->add_output(out->name());
    for (const auto& [name, value] : node->attrs().all()) SetAttribute(name, value, n->add_attribute());
  }
  for (const Value* v : graph.outputs()) SetValueInfo(*v, *derived, g->add_output());

  // The importer's checker: a graph of opset 18 (torch's dynamo exports) is
  // newer than Debian's libonnx, whose own check_model would hold its
  // Reduce* and Split nodes to opset 13's definitions. Its notes say what the
  // import of the result will say again.
  std::vector<std::string> notes;
  const std::string data_dir = options.external_data.has_value() ? options.external_data->dir : "";
  if (absl::Status s = CheckOnnxModel(*model, data_dir, &notes); !s.ok()) {
    return absl::InternalError(absl::StrCat("the exported model: ", s.message()));  // "ONNX checker rejected..."
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportOptions> ReadRecordedDims(const onnx::ModelProto& model) {
  ImportOptions parsed;
  const std::string prefix = kDimRangeMetadataPrefix;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (entry.key().rfind(prefix, 0) != 0) continue;
    std::string name = entry.key().substr(prefix.size());
    if (absl::Status s = ParseDimFlag(absl::StrCat(name, "=", entry.value()), &parsed); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata '", entry.key(), "' = '", entry.value(), "': ", s.message()));
    }
  }
  return parsed;
}

absl::StatusOr<std::string> ExportOnnxBytes(const Graph& graph, const ShapeEnv& env, const ExportOptions& options) {
  onnx::ModelProto model;
  if (absl::Status s = ExportOnnxModel(graph, env, options, &model); !s.ok()) return s;
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return absl::InternalError("the exported model cannot be serialized (over protobuf's 2 GiB limit?)");
  }
  return bytes;
}

absl::Status ExportOnnxFile(const Graph& graph, const ShapeEnv& env, const std::string& path,
                            const ExportOptions& options) {
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(graph, env, options);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for writing"));
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!file) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace shapeshift
