// Typed attribute lookup: a missing attribute falls back (or is an error when
// required); a present attribute of the wrong type is always an error naming it.
#include "graph/attributes.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shapeshift {
namespace {

absl::string_view KindName(const AttrValue& v) {
  switch (v.index()) {
    case 0: return "int";
    case 1: return "float";
    case 2: return "string";
    case 3: return "ints";
    case 4: return "floats";
    case 5: return "strings";
    case 6: return "tensor";
  }
  return "?";
}

template <typename T>
absl::StatusOr<T> Lookup(const std::map<std::string, AttrValue>& values, const std::string& name,
                         absl::string_view wanted) {
  auto it = values.find(name);
  if (it == values.end()) {
    return absl::InvalidArgumentError(absl::StrCat("missing required attribute '", name, "'"));
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' is ", KindName(it->second),
                                                 ", expected ", wanted));
}

}  // namespace

absl::StatusOr<int64_t> Attributes::GetInt(const std::string& name, int64_t fallback) const {
  if (!Has(name)) return fallback;
  return Lookup<int64_t>(values_, name, "int");
}

absl::StatusOr<int64_t> Attributes::GetInt(const std::string& name) const {
  return Lookup<int64_t>(values_, name, "int");
}

absl::StatusOr<float> Attributes::GetFloat(const std::string& name, float fallback) const {
  if (!Has(name)) return fallback;
  return Lookup<float>(values_, name, "float");
}

absl::StatusOr<std::string> Attributes::GetString(const std::string& name,
                                                  std::string fallback) const {
  if (!Has(name)) return fallback;
  return Lookup<std::string>(values_, name, "string");
}

absl::StatusOr<std::vector<int64_t>> Attributes::GetInts(const std::string& name) const {
  return Lookup<std::vector<int64_t>>(values_, name, "ints");
}

absl::StatusOr<std::vector<int64_t>> Attributes::GetInts(const std::string& name,
                                                         std::vector<int64_t> fallback) const {
  if (!Has(name)) return fallback;
  return Lookup<std::vector<int64_t>>(values_, name, "ints");
}

absl::StatusOr<std::vector<float>> Attributes::GetFloats(const std::string& name) const {
  return Lookup<std::vector<float>>(values_, name, "floats");
}

absl::StatusOr<Tensor> Attributes::GetTensor(const std::string& name) const {
  return Lookup<Tensor>(values_, name, "tensor");
}

}  // namespace shapeshift
