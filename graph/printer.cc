#include "graph/printer.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/graph.h"

namespace shapeshift {
namespace {

std::string ValueRef(const Value* v) { return v == nullptr ? "<absent>" : absl::StrCat("%", v->name()); }

std::string ElementsToString(const std::vector<SymExpr>& elements) {
  return absl::StrCat(
      "{", absl::StrJoin(elements, ", ", [](std::string* out, SymExpr e) { out->append(e.ToString()); }),
      "}");
}

struct AttrPrinter {
  std::string operator()(int64_t v) const { return absl::StrCat(v); }
  std::string operator()(float v) const { return absl::StrCat(v); }
  std::string operator()(const std::string& v) const { return absl::StrCat("\"", v, "\""); }
  std::string operator()(const std::vector<int64_t>& v) const {
    return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
  }
  std::string operator()(const std::vector<float>& v) const {
    return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
  }
  std::string operator()(const std::vector<std::string>& v) const {
    return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
  }
  std::string operator()(const Tensor& t) const { return t.DebugString(4); }
};

}  // namespace

std::string PrintAttributes(const Attributes& attrs) {
  if (attrs.all().empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [name, value] : attrs.all()) {
    parts.push_back(absl::StrCat(name, "=", std::visit(AttrPrinter{}, value)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

std::string PrintValueDecl(const Value& value) {
  return absl::StrCat("%", value.name(), ": ", value.type().ToString());
}

std::string PrintNode(const Node& node) {
  std::vector<std::string> outs;
  for (const Value* v : node.outputs()) outs.push_back(PrintValueDecl(*v));
  std::vector<std::string> ins;
  for (const Value* v : node.inputs()) ins.push_back(ValueRef(v));
  std::string line = absl::StrCat(absl::StrJoin(outs, ", "), " = ", node.op_type(), "(",
                                  absl::StrJoin(ins, ", "), ")");
  std::string attrs = PrintAttributes(node.attrs());
  if (!attrs.empty()) absl::StrAppend(&line, " ", attrs);
  absl::StrAppend(&line, "  # ", node.name());
  for (const Value* v : node.outputs()) {
    if (v->elements() && !v->elements()->empty()) {
      absl::StrAppend(&line, "  values=", ElementsToString(*v->elements()));
    }
  }
  return line;
}

std::string PrintGraph(const Graph& graph) {
  std::string out = absl::StrCat("graph opset=", graph.opset(), " {\n");
  for (const Value* v : graph.inputs()) absl::StrAppend(&out, "  input  ", PrintValueDecl(*v), "\n");
  for (const Value* v : graph.constants()) {
    absl::StrAppend(&out, "  const  ", PrintValueDecl(*v));
    if (v->elements() && !v->elements()->empty()) {
      absl::StrAppend(&out, "  values=", ElementsToString(*v->elements()));
    }
    absl::StrAppend(&out, "\n");
  }
  for (const Node* n : graph.nodes()) absl::StrAppend(&out, "  ", PrintNode(*n), "\n");
  for (const Value* v : graph.outputs()) absl::StrAppend(&out, "  output ", ValueRef(v), "\n");
  absl::StrAppend(&out, "}\n");
  return out;
}

}  // namespace shapeshift
