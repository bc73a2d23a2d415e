#include "runtime/input_binder.h"

#include <limits>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift::runtime {

absl::StatusOr<InputBinder> InputBinder::Create(const Graph& graph, const ShapeEnv& env, bool allow_undeclared) {
  InputBinder binder;
  absl::flat_hash_map<std::string, int> slot_of;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* in = graph.inputs()[i];
    BoundInput spec{in->name(), in->type().dtype, {}};
    for (size_t k = 0; k < in->type().shape.size(); ++k) {
      const SymExpr& dim = in->type().shape[k];
      BoundInputDim d;
      d.fixed = dim.AsConst();
      if (dim.IsSymbol()) {
        auto [it, first] = slot_of.emplace(dim.symbol_name(), static_cast<int>(binder.symbols_.size()));
        if (!first) {
          d.repeat = it->second;
        } else {
          const SymbolInfo* info = env.FindSymbol(dim.symbol_name());
          if (info == nullptr && !allow_undeclared) {
            return absl::InvalidArgumentError(absl::StrCat("input '", in->name(), "' dim ", k, ": symbol '",
                                                           dim.symbol_name(), "' is not declared"));
          }
          d.bind = it->second;
          binder.symbols_.push_back({dim.symbol_name(), static_cast<int>(i), static_cast<int>(k),
                                     info ? info->min : 0, info ? info->max : std::numeric_limits<int64_t>::max(),
                                     info ? RangeNoteSuffix(*info) : std::string()});
        }
      }
      spec.dims.push_back(d);
    }
    binder.inputs_.push_back(std::move(spec));
  }
  // The relations, over the bound symbols. A static entry's program pins
  // dims to constants (no input binds them): their values go in, and a
  // relation left with no symbol holds (the dispatcher bound the request
  // that pinned them) or is the caller's error.
  absl::flat_hash_map<std::string, SymExpr> pinned;
  for (const SymbolInfo& s : env.symbols()) {
    if (s.min == s.max && !slot_of.contains(s.name)) pinned[s.name] = SymExpr(s.min);
  }
  std::vector<Predicate> atoms;
  std::vector<DomainConstraint> constraints;
  for (const DomainConstraint& c : env.domain_constraints()) {
    Predicate p = pinned.empty() ? c.predicate : c.predicate.Substitute(pinned);
    absl::btree_set<std::string> left;
    p.CollectSymbols(&left);
    if (left.empty()) {
      absl::StatusOr<bool> holds = p.Evaluate({});
      if (holds.ok() && *holds) continue;
      return absl::InvalidArgumentError(absl::StrCat("the pinned dims break the domain's relation ",
                                                     c.predicate.ToString()));
    }
    atoms.push_back(std::move(p));
    constraints.push_back(c);
  }
  if (!atoms.empty()) {
    // Every other symbol of a relation is an input dim (the importer makes
    // them only of those), so bound here; one that is not is the caller's error.
    absl::StatusOr<GuardProgram> program = GuardProgram::Compile(atoms, binder.symbol_names());
    if (!program.ok()) {
      return absl::Status(program.status().code(),
                          absl::StrCat("the domain's relations: ", program.status().message()));
    }
    binder.relations_ = BoundRelations{*std::move(program), std::move(constraints)};
  }
  return binder;
}

absl::Status InputBinder::RelationError(size_t failed, absl::Span<const int64_t> values) const {
  if (failed >= relations_->constraints.size()) return absl::InternalError("binding the domain's relations");
  Assignment bound;
  for (size_t i = 0; i < symbols_.size(); ++i) bound[symbols_[i].name] = values[i];
  return RelationRefusal(relations_->constraints[failed], bound);
}

std::vector<std::string> InputBinder::symbol_names() const {
  std::vector<std::string> names;
  names.reserve(symbols_.size());
  for (const SymbolBinding& s : symbols_) names.push_back(s.name);
  return names;
}

absl::Status InputBinder::Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  if (values.size() != symbols_.size()) {
    return absl::InternalError(absl::StrCat("binding ", symbols_.size(), " symbols into ", values.size(), " slots"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BoundInput& spec = inputs_[i];
    const TensorView& in = inputs[i];
    if (in.dtype != spec.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("input '", spec.name, "' has dtype ", DTypeName(in.dtype),
                                                     ", expected ", DTypeName(spec.dtype)));
    }
    if (in.shape.size() != spec.dims.size()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", spec.name, "' has rank ", in.shape.size(),
                                                     ", expected ", spec.dims.size()));
    }
    for (size_t k = 0; k < spec.dims.size(); ++k) {
      const BoundInputDim& d = spec.dims[k];
      if (d.fixed.has_value() && in.shape[k] != *d.fixed) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", spec.name, "' dim ", k, " is ", in.shape[k], ", expected ", *d.fixed));
      }
      if (d.bind < 0) continue;
      const SymbolBinding& s = symbols_[d.bind];
      const int64_t v = in.shape[k];
      if (v < s.min || v > s.max) {
        return absl::OutOfRangeError(absl::StrCat("input '", spec.name, "' dim ", k, " (", s.name, ") = ", v,
                                                  " is outside the declared range ", s.min, "..", s.max, s.note));
      }
      values[d.bind] = v;
    }
  }
  // Every repeated occurrence of a bound symbol must agree with its binding.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BoundInput& spec = inputs_[i];
    for (size_t k = 0; k < spec.dims.size(); ++k) {
      const int r = spec.dims[k].repeat;
      if (r < 0 || values[r] == inputs[i].shape[k]) continue;
      const SymbolBinding& s = symbols_[r];
      return absl::InvalidArgumentError(absl::StrCat("input '", spec.name, "' dim ", k, " (", s.name, ") is ",
                                                     inputs[i].shape[k], " but input '", inputs_[s.input].name,
                                                     "' dim ", s.dim, " says ", s.name, " = ", values[r]));
    }
  }
  if (relations_.has_value()) {
    const GuardVerdict verdict = relations_->program.Evaluate(values);
    if (!verdict.pass) return RelationError(verdict.failed_atom, values);
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::runtime
