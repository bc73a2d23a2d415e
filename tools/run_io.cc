#include "tools/run_io.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/dtype.h"
#include "graph/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace shapeshift::tools {
namespace fs = std::filesystem;

absl::StatusOr<std::vector<Tensor>> ReadInputsFromDir(const std::string& dir,
                                                      const std::vector<InputRecipe>& recipes) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat("--inputs-from ", dir, ": not a directory"));
  }
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < recipes.size(); ++i) index_of[recipes[i].name] = i;
  std::vector<std::optional<Tensor>> slots(recipes.size());
  std::vector<std::string> sources(recipes.size());
  size_t next_unnamed = 0;
  for (size_t k = 0;; ++k) {
    const std::string path = (fs::path(dir) / absl::StrCat("input_", k, ".pb")).string();
    if (!fs::exists(path, error)) break;
    std::string name;
    absl::StatusOr<Tensor> tensor = ReadTensorProtoFile(path, &name);
    if (!tensor.ok()) return tensor.status();
    size_t slot = 0;
    if (!name.empty()) {
      auto it = index_of.find(name);
      if (it == index_of.end()) {
        std::vector<std::string> known;
        for (const InputRecipe& r : recipes) known.push_back(r.name);
        return absl::InvalidArgumentError(absl::StrCat(path, ": the model has no input '", name,
                                                       "' (its inputs: ", absl::StrJoin(known, ", "), ")"));
      }
      slot = it->second;
    } else {
      while (next_unnamed < slots.size() && slots[next_unnamed].has_value()) ++next_unnamed;
      if (next_unnamed == slots.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": one file more than the model's ", recipes.size(), " input(s)"));
      }
      slot = next_unnamed;
    }
    if (slots[slot].has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": input '", recipes[slot].name, "' is also given by ", sources[slot]));
    }
    if (tensor->dtype() != recipes[slot].type.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": input '", recipes[slot].name, "' is ",
                                                     DTypeName(recipes[slot].type.dtype), ", the file holds ",
                                                     DTypeName(tensor->dtype())));
    }
    slots[slot] = *std::move(tensor);
    sources[slot] = path;
  }
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i].has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--inputs-from ", dir, ": no input_K.pb file for input '", recipes[i].name, "'"));
    }
    inputs.push_back(*std::move(slots[i]));
  }
  return inputs;
}

std::vector<std::string> InputShapeFlags(const std::vector<InputRecipe>& recipes,
                                         const std::vector<Tensor>& inputs) {
  std::vector<std::string> flags;
  for (size_t i = 0; i < recipes.size() && i < inputs.size(); ++i) {
    flags.push_back(absl::StrCat(recipes[i].name, "=",
                                 inputs[i].shape().empty() ? "[]" : absl::StrJoin(inputs[i].shape(), "x")));
  }
  return flags;
}

absl::Status WriteOutputsToDir(const std::string& dir, const std::vector<std::string>& names,
                               const std::vector<Tensor>& outputs) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return absl::PermissionDeniedError(absl::StrCat("--save-outputs ", dir, ": ", error.message()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    onnx::TensorProto proto;
    TensorToProto(outputs[k], k < names.size() ? names[k] : "", &proto);
    const fs::path path = fs::path(dir) / absl::StrCat("output_", k, ".pb");
    const fs::path temporary = fs::path(dir) / absl::StrCat(".output_", k, ".pb.tmp");
    {
      std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
      if (!file || !proto.SerializeToOstream(&file) || !file.flush()) {
        return absl::PermissionDeniedError(absl::StrCat("--save-outputs: cannot write ", temporary.string()));
      }
    }
    fs::rename(temporary, path, error);
    if (error) return absl::PermissionDeniedError(absl::StrCat("--save-outputs: cannot write ", path.string()));
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::tools
