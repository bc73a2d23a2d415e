#include "graph/interpreter.h"

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/reference/kernel.h"

namespace shapeshift {
namespace {

// Where a symbol got its value, for error messages.
struct BindingSite {
  std::string value;
  size_t dim = 0;
};

class SymbolBinder {
 public:
  explicit SymbolBinder(Assignment* values) : values_(values) {}

  // Binds the symbol dims of `type` from `shape` (first occurrence wins).
  void BindSymbols(const TensorType& type, const std::vector<int64_t>& shape, const std::string& what) {
    for (size_t d = 0; d < type.shape.size(); ++d) {
      SymExpr dim = type.shape[d];
      if (dim.IsSymbol() && !values_->contains(dim.symbol_name())) {
        (*values_)[dim.symbol_name()] = shape[d];
        sites_[dim.symbol_name()] = {what, d};
      }
    }
  }

  // Every dim of `type` must evaluate to `shape`'s. Dims whose symbols are
  // not bound yet (data-dependent sizes behind an expression) are skipped.
  absl::Status Check(const TensorType& type, const std::vector<int64_t>& shape, const std::string& what) const {
    for (size_t d = 0; d < type.shape.size(); ++d) {
      SymExpr dim = type.shape[d];
      absl::StatusOr<int64_t> expected = dim.Evaluate(*values_);
      if (!expected.ok()) continue;
      if (*expected == shape[d]) continue;
      std::string origin;
      if (dim.IsSymbol()) {
        auto it = sites_.find(dim.symbol_name());
        if (it != sites_.end()) {
          origin = absl::StrCat(" (", dim.symbol_name(), " = ", *expected, " from '", it->second.value,
                                "' dim ", it->second.dim, ")");
        }
      } else if (!dim.IsConst()) {
        origin = absl::StrCat(" (", dim.ToString(), " = ", *expected, ")");
      }
      return absl::InvalidArgumentError(absl::StrCat(what, " dim ", d, " is ", shape[d], " but its type ",
                                                     type.ToString(), " requires ", *expected, origin));
    }
    return absl::OkStatus();
  }

 private:
  Assignment* values_;
  absl::flat_hash_map<std::string, BindingSite> sites_;
};

absl::Status CheckDTypeAndRank(const TensorType& type, const Tensor& t, const std::string& what) {
  if (t.dtype() != type.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has dtype ", DTypeName(t.dtype()), ", expected ",
                                                   type.ToString()));
  }
  if (t.rank() != type.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has rank ", t.rank(), " (", t.DebugString(0),
                                                   "), expected ", type.ToString()));
  }
  return absl::OkStatus();
}

absl::Status BindInto(const Graph& graph, const std::vector<Tensor>& inputs, SymbolBinder& binder) {
  const std::vector<Value*>& declared = graph.inputs();
  if (inputs.size() != declared.size()) {
    std::string names;
    for (const Value* v : declared) absl::StrAppend(&names, names.empty() ? "" : ", ", v->name());
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", declared.size(), " inputs (", names, "), got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = absl::StrCat("input '", declared[i]->name(), "'");
    if (absl::Status s = CheckDTypeAndRank(declared[i]->type(), inputs[i], what); !s.ok()) return s;
    binder.BindSymbols(declared[i]->type(), inputs[i].shape(), declared[i]->name());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = absl::StrCat("input '", declared[i]->name(), "'");
    if (absl::Status s = binder.Check(declared[i]->type(), inputs[i].shape(), what); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Assignment> BindInputSymbols(const Graph& graph, const std::vector<Tensor>& inputs) {
  Assignment values;
  SymbolBinder binder(&values);
  if (absl::Status s = BindInto(graph, inputs, binder); !s.ok()) return s;
  return values;
}

absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph, const std::vector<Tensor>& inputs) {
  Assignment symbols;
  SymbolBinder binder(&symbols);
  if (absl::Status s = BindInto(graph, inputs, binder); !s.ok()) return s;

  std::vector<std::optional<Tensor>> slots(graph.value_id_bound());
  // Remaining reads per value, so intermediates are freed after their last use.
  std::vector<int> reads(graph.value_id_bound(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) slots[graph.inputs()[i]->id()] = inputs[i];
  for (const Value* c : graph.constants()) slots[c->id()] = *c->constant();
  for (const Node* node : graph.nodes()) {
    for (const Value* in : node->inputs()) {
      if (in != nullptr) ++reads[in->id()];
    }
  }
  for (const Value* out : graph.outputs()) ++reads[out->id()];

  for (const Node* node : graph.nodes()) {
    KernelArgs args;
    args.op_type = node->op_type();
    args.node_name = node->name();
    args.opset = graph.opset();
    args.attrs = &node->attrs();
    args.num_outputs = node->num_outputs();
    for (const Value* in : node->inputs()) {
      if (in == nullptr) {
        args.inputs.push_back(nullptr);
        continue;
      }
      if (!slots[in->id()]) {
        return absl::InternalError(absl::StrCat("node '", node->name(), "' reads '", in->name(),
                                                "' before it was computed"));
      }
      args.inputs.push_back(&*slots[in->id()]);
    }
    absl::StatusOr<std::vector<Tensor>> outs = RunReferenceKernel(args);
    if (!outs.ok()) return outs.status();
    if (static_cast<int>(outs->size()) != node->num_outputs()) {
      return absl::InternalError(absl::StrCat("node '", node->name(), "' (", node->op_type(), ") produced ",
                                              outs->size(), " outputs, expected ", node->num_outputs()));
    }
    for (int i = 0; i < node->num_outputs(); ++i) {
      const Value* v = node->output(i);
      Tensor& t = (*outs)[i];
      std::string what = absl::StrCat("output '", v->name(), "' of node '", node->name(), "' (",
                                      node->op_type(), ")");
      if (absl::Status s = CheckDTypeAndRank(v->type(), t, what); !s.ok()) return s;
      binder.BindSymbols(v->type(), t.shape(), v->name());
      if (absl::Status s = binder.Check(v->type(), t.shape(), what); !s.ok()) return s;
      slots[v->id()] = std::move(t);
    }
    for (const Value* in : node->inputs()) {
      if (in != nullptr && --reads[in->id()] == 0) slots[in->id()].reset();
    }
  }
  std::vector<Tensor> results;
  for (const Value* out : graph.outputs()) {
    if (!slots[out->id()]) {
      return absl::InternalError(absl::StrCat("graph output '", out->name(), "' was not computed"));
    }
    results.push_back(*slots[out->id()]);
  }
  return results;
}

}  // namespace shapeshift
