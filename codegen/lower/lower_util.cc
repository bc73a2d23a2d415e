#include "codegen/lower/lower_util.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::lower {

absl::Status GroupError(const passes::Group& g, const Node* node, absl::string_view why) {
  return absl::UnimplementedError(
      absl::StrCat("cannot lower group #", g.id,
                   node ? absl::StrCat(" (node '", node->name(), "' ", node->op_type(), ")") : "", ": ", why));
}

SymExpr Product(const std::vector<SymExpr>& dims, size_t begin, size_t end) {
  SymExpr p = 1;
  for (size_t i = begin; i < end; ++i) p = p * dims[i];
  return p;
}

}  // namespace shapeshift::codegen::lower
