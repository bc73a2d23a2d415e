// Node attributes: the typed values ONNX nodes carry (axis, perm, epsilon, a
// constant's value tensor, ...). Shared by the IR, shape rules and kernels.
#ifndef SHAPESHIFT_GRAPH_ATTRIBUTES_H_
#define SHAPESHIFT_GRAPH_ATTRIBUTES_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace shapeshift {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

class Attributes {
 public:
  void Set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  const std::map<std::string, AttrValue>& all() const { return values_; }

  // Typed getters: the fallback when absent; an error naming the attribute
  // when present with the wrong type.
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;  // required
  absl::StatusOr<float> GetFloat(const std::string& name, float fallback) const;
  absl::StatusOr<std::string> GetString(const std::string& name, std::string fallback) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(const std::string& name) const;  // required
  absl::StatusOr<std::vector<int64_t>> GetInts(const std::string& name,
                                               std::vector<int64_t> fallback) const;
  absl::StatusOr<std::vector<float>> GetFloats(const std::string& name) const;
  absl::StatusOr<Tensor> GetTensor(const std::string& name) const;  // required

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ATTRIBUTES_H_
