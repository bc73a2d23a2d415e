#include "tests/fuzz/checks/weights_left_in_file_check.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/onnx/weights_left_in_file.h"
#include "onnx/onnx_pb.h"

namespace shapeshift::fuzz {
namespace {

constexpr char kLocation[] = "fuzz.onnx";

void SetEntry(onnx::TensorProto* t, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto* entry = t->add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

}  // namespace

Violation CheckWeightsLeftInFile(absl::string_view bytes) {
  std::optional<ModelWithoutWeights> lean =
      LeaveWeightsInFile(std::string_view(bytes.data(), bytes.size()), kLocation, kFuzzWeightMinBytes);
  if (!lean.has_value()) return std::nullopt;
  onnx::ModelProto original;
  const bool original_parses = original.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  onnx::ModelProto rewritten;
  const bool rewritten_parses = rewritten.ParseFromString(lean->message);
  if (original_parses != rewritten_parses) {
    return absl::StrCat("the bytes ", original_parses ? "parse" : "do not parse", " but the rewritten message ",
                        rewritten_parses ? "does" : "does not");
  }
  if (!original_parses) return std::nullopt;
  for (const WeightInFile& w : lean->weights) {
    if (w.index < 0 || w.index >= original.graph().initializer_size()) {
      return absl::StrCat("weight '", w.name, "' has index ", w.index, " of ", original.graph().initializer_size());
    }
    onnx::TensorProto* t = original.mutable_graph()->mutable_initializer(w.index);
    if (w.offset < 0 || w.size < 0 || static_cast<size_t>(w.offset + w.size) > bytes.size() ||
        bytes.substr(static_cast<size_t>(w.offset), static_cast<size_t>(w.size)) != t->raw_data()) {
      return absl::StrCat("weight '", w.name, "' at [", w.offset, ", +", w.size, ") is not its raw_data");
    }
    if (w.name != t->name()) return absl::StrCat("weight '", w.name, "' is initializer '", t->name(), "'");
    t->clear_raw_data();
    SetEntry(t, "location", kLocation);
    SetEntry(t, "offset", absl::StrCat(w.offset));
    SetEntry(t, "length", absl::StrCat(w.size));
    t->set_data_location(onnx::TensorProto::EXTERNAL);
  }
  if (original.SerializeAsString() != rewritten.SerializeAsString()) {
    return "the rewritten message is not the model with its weights as external data";
  }
  return std::nullopt;
}

}  // namespace shapeshift::fuzz
