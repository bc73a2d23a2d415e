#include "graph/onnx/model_checker.h"

#include <algorithm>
#include <exception>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"

namespace shapeshift {
namespace {

namespace pb = google::protobuf;

// Nodes of these ops are schema-checked elsewhere (see the header).
constexpr char kUncheckedDomain[] = "shapeshift.schema_newer_than_checker";

// IR-10 fields that only carry metadata (field numbers from onnx.proto):
// unknown to libonnx 1.12's schema, ignored by every reader here.
bool IsMetadataField(const std::string& message, int number) {
  static const auto* fields = new std::unordered_map<std::string, int>{
      {"onnx.ValueInfoProto", 4}, {"onnx.NodeProto", 9},      {"onnx.GraphProto", 16},
      {"onnx.TensorProto", 16},   {"onnx.FunctionProto", 14},
  };
  auto it = fields->find(message);
  return it != fields->end() && it->second == number;
}

// Default-domain ops whose definition changed in opset 18 (the newest the
// importer accepts) — the ones a 1.12 checker would check against an older
// schema, or (Mish, the bitwise ops, CenterCropPad, Col2Im,
// GroupNormalization) has none for.
bool ChangedInOpset18(const std::string& op) {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "CenterCropPad", "Col2Im", "GroupNormalization",
      "LpPool", "Mish", "OptionalGetElement", "OptionalHasElement", "Pad", "ReduceL1", "ReduceL2", "ReduceLogSum",
      "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare", "Resize",
      "ScatterElements", "ScatterND", "Split"};
  return ops->contains(op);
}

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The checker's message on one line. libonnx 1.12 writes its context after
// a literal backslash-n pair ("...max=1].\\n\\n==> Context: Bad node spec
// for node. Name: n OpType: Relu"), which a terminal shows as typed:
// "what (context)" instead.
std::string CheckerMessage(absl::string_view what) {
  std::string text = absl::StrReplaceAll(what, {{"\\n", "\n"}});
  std::string context;
  if (size_t at = text.find("==> Context:"); at != std::string::npos) {
    context = std::string(absl::StripAsciiWhitespace(text.substr(at + 12)));
    text.resize(at);
  }
  std::string line = absl::StrJoin(absl::StrSplit(text, absl::ByAnyChar("\r\n"), absl::SkipWhitespace()), " ");
  line = std::string(absl::StripSuffix(absl::StripAsciiWhitespace(line), "."));
  return context.empty() ? line : absl::StrCat(line, " (", context, ")");
}

// An element type number beyond libonnx 1.12's (BFLOAT16 = 16), as a phrase
// saying which IR version defines it, or that none does (a corrupted file).
std::string NewerElementType(int type) {
  switch (type) {
    case 17: return "float8 element type FLOAT8E4M3FN (IR 9+)";
    case 18: return "float8 element type FLOAT8E4M3FNUZ (IR 9+)";
    case 19: return "float8 element type FLOAT8E5M2 (IR 9+)";
    case 20: return "float8 element type FLOAT8E5M2FNUZ (IR 9+)";
    case 21: return "int4 element type UINT4 (IR 10+)";
    case 22: return "int4 element type INT4 (IR 10+)";
    case 23: return "float4 element type FLOAT4E2M1 (IR 11+)";
    default: return absl::StrCat("unknown element type ", type, " (no ONNX IR version up to 11 defines it)");
  }
}

// The first use of something IR 8 cannot express, as a phrase, or "".
std::string FirstNewerFeature(const pb::Message& message) {
  const pb::Reflection* reflection = message.GetReflection();
  const pb::Descriptor* descriptor = message.GetDescriptor();
  const pb::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    int number = unknown.field(i).number();
    if (!IsMetadataField(descriptor->full_name(), number)) {
      return absl::StrCat("field ", number, " of ", descriptor->name(), " (not in IR 8)");
    }
  }
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->type() == pb::FieldDescriptor::TYPE_INT32 && !field->is_repeated() &&
        (field->name() == "elem_type" || field->name() == "data_type")) {
      int type = reflection->GetInt32(message, field);
      if (type > onnx::TensorProto_DataType_DataType_MAX) {
        return absl::StrCat("element type ", type, " in ", descriptor->name(), ": ", NewerElementType(type));
      }
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int k = 0; k < reflection->FieldSize(message, field); ++k) {
        std::string found = FirstNewerFeature(reflection->GetRepeatedMessage(message, field, k));
        if (!found.empty()) return found;
      }
    } else {
      std::string found = FirstNewerFeature(reflection->GetMessage(message, field));
      if (!found.empty()) return found;
    }
  }
  return "";
}

bool UsesExternalData(const onnx::ModelProto& model) {
  for (const onnx::TensorProto& init : model.graph().initializer()) {
    if (init.data_location() == onnx::TensorProto::EXTERNAL) return true;
  }
  return false;
}

int DefaultOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (IsDefaultDomain(id.domain())) return static_cast<int>(id.version());
  }
  return 0;
}

// Moves the top-level nodes of ops changed after `checker_opset` to
// kUncheckedDomain for the lifetime of the object; returns their op types.
class UncheckedNodes {
 public:
  UncheckedNodes(onnx::ModelProto& model, int checker_opset) : model_(model) {
    if (DefaultOpset(model) <= checker_opset) return;
    for (int i = 0; i < model.graph().node_size(); ++i) {
      onnx::NodeProto* node = model.mutable_graph()->mutable_node(i);
      if (!IsDefaultDomain(node->domain()) || !ChangedInOpset18(node->op_type())) continue;
      moved_.emplace_back(i, node->domain());
      ops_.insert(node->op_type());
      node->set_domain(kUncheckedDomain);
    }
    if (moved_.empty()) return;
    onnx::OperatorSetIdProto* id = model.add_opset_import();
    id->set_domain(kUncheckedDomain);
    id->set_version(1);
  }
  ~UncheckedNodes() {
    if (moved_.empty()) return;
    for (const auto& [index, domain] : moved_) model_.mutable_graph()->mutable_node(index)->set_domain(domain);
    model_.mutable_opset_import()->RemoveLast();
  }
  const std::set<std::string>& ops() const { return ops_; }

 private:
  onnx::ModelProto& model_;
  std::vector<std::pair<int, std::string>> moved_;
  std::set<std::string> ops_;
};

// check_model's tests of the ModelProto's own fields, in its words.
void CheckModelFields(const onnx::ModelProto& model) {
  if (model.ir_version() == 0) fail_check("The model does not have an ir_version set properly.");
  std::set<std::string> keys;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (!keys.insert(entry.key()).second) fail_check("Your model has duplicate keys in metadata_props.");
  }
  if (model.ir_version() >= 3 && model.opset_import_size() == 0) {
    fail_check("model with IR version >= 3 must specify opset_import for ONNX");
  }
  if (model.ir_version() < 3 && model.opset_import_size() > 0) {
    fail_check("model with IR version < 3 cannot have opset_import specified");
  }
}

}  // namespace

absl::Status CheckOnnxModel(onnx::ModelProto& model, const std::string& model_dir, std::vector<std::string>* notes) {
  const int64_t checker_ir = onnx::Version::IR_VERSION;
  const int checker_opset = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
  const int64_t declared_ir = model.ir_version();
  try {
    // The library's own entry point for models it fully knows, unless some
    // weights are external data: check_model(message) knows no directory to
    // find them in, and its file form would parse the whole file again (for
    // a model read by ParseOnnxFile, whose large weights are external data in
    // the model file itself, that is every weight). Those take the route
    // below, which resolves them in `model_dir`.
    if (declared_ir <= checker_ir && DefaultOpset(model) <= checker_opset && !UsesExternalData(model)) {
      onnx::checker::check_model(model);
      return absl::OkStatus();
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX checker rejected the model: ", CheckerMessage(e.what())));
  }
  if (declared_ir > checker_ir) {
    std::string feature = FirstNewerFeature(model);
    if (!feature.empty()) {
      return absl::UnimplementedError(absl::StrCat("the model declares IR version ", declared_ir, " and uses ",
                                                   feature, "; the ONNX checker here knows IR ", checker_ir,
                                                   " only"));
    }
  }
  std::set<std::string> unchecked_ops;
  // What check_model does after its version tests, with the context's IR
  // version capped at the newest the checker knows.
  try {
    CheckModelFields(model);
    UncheckedNodes unchecked(model, checker_opset);
    unchecked_ops = unchecked.ops();
    onnx::checker::CheckerContext context;
    context.set_ir_version(static_cast<int>(std::min(declared_ir, checker_ir)));
    context.set_model_dir(model_dir);
    std::unordered_map<std::string, int> opsets;
    for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
      opsets[id.domain()] = static_cast<int>(id.version());
    }
    context.set_opset_imports(opsets);
    onnx::checker::LexicalScopeContext scope;
    onnx::checker::check_graph(model.graph(), context, scope);
    onnx::checker::check_model_local_functions(model, context, scope);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX checker rejected the model (checked as IR ",
                                                   std::min(declared_ir, checker_ir), "): ",
                                                   CheckerMessage(e.what())));
  }
  if (declared_ir > checker_ir) {
    notes->push_back(absl::StrCat("IR version ", declared_ir, " checked as IR ", checker_ir,
                                  ": the model uses no newer element type or field (metadata_props ignored)"));
  }
  if (!unchecked_ops.empty()) {
    notes->push_back(absl::StrCat("opset ", DefaultOpset(model), " nodes of ", absl::StrJoin(unchecked_ops, ", "),
                                  " were not schema-checked by the ONNX checker (it knows opset ", checker_opset,
                                  "); shapeshift's shape rules check them"));
  }
  return absl::OkStatus();
}

}  // namespace shapeshift
