#include "graph/shape_inference.h"

#include <algorithm>
#include <limits>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/op_table.h"

namespace shapeshift {
namespace {

// The largest `hi` in [min, max) such that `question` is proven when
// `symbol <= hi` is assumed, by binary search on hi (about log2(max - min)
// questions, each range analysis then Z3); nullopt when even `hi = min`
// fails. Provability only grows as the range shrinks, so the search finds
// the widest range the prover can vouch for.
std::optional<int64_t> WidestProvableMax(ShapeEnv& env, const std::string& symbol, int64_t min, int64_t max,
                                         const Predicate& question) {
  SymExpr sym = SymExpr::Symbol(symbol);
  auto proven_up_to = [&](int64_t hi) {
    ShapeEnv::Scope scope = env.Assume(Predicate::Le(sym, hi));
    return env.CanProve(question);
  };
  if (min >= max || !proven_up_to(min)) return std::nullopt;
  int64_t good = min, bad = max;  // the question is unknown over the whole range
  while (bad - good > 1) {
    int64_t mid = good + (bad - good) / 2;
    if (proven_up_to(mid)) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  return good;
}

bool IsOrderQuestion(const Predicate& p) {
  const PredKind k = p.kind();
  return k == PredKind::kLe || k == PredKind::kLt || k == PredKind::kGe || k == PredKind::kGt;
}

// An order question as users read a bound: symbols on the left with positive
// coefficients where possible, the constant on the right, `<=` / `>=`
// (`past_sequence + sequence - 1 <= 1023` → `past_sequence + sequence <=
// 1024`; MPT's `-past_sequence - sequence + 512 >= 0` → `past_sequence +
// sequence <= 512`). The same set of points: a rewrite of integer
// inequalities.
Predicate ReadableBound(const Predicate& p) {
  SymExpr diff = p.lhs() - p.rhs();  // p: diff OP 0
  int64_t constant = 0;
  bool all_negative = true;
  auto negative_term = [](const SymExpr& t) {
    if (t.kind() != ExprKind::kMul || t.operands().empty()) return false;
    std::optional<int64_t> c = t.operands()[0].AsConst();
    return c.has_value() && *c < 0;
  };
  if (std::optional<int64_t> c = diff.AsConst()) return p;  // no symbol: nothing to arrange
  if (diff.kind() == ExprKind::kAdd) {
    for (const SymExpr& t : diff.operands()) {
      if (std::optional<int64_t> c = t.AsConst()) {
        constant = *c;
      } else {
        all_negative = all_negative && negative_term(t);
      }
    }
  } else {
    all_negative = negative_term(diff);
  }
  SymExpr vars = diff - constant;  // p: vars OP -constant
  PredKind kind = p.kind();
  int64_t bound = -constant;
  if (all_negative) {  // -vars OP' constant
    vars = -vars;
    bound = constant;
    kind = kind == PredKind::kLe ? PredKind::kGe
           : kind == PredKind::kLt ? PredKind::kGt
           : kind == PredKind::kGe ? PredKind::kLe
                                   : PredKind::kLt;
  }
  switch (kind) {
    case PredKind::kLt: return Predicate::Le(vars, bound - 1);
    case PredKind::kGt: return Predicate::Ge(vars, bound + 1);
    case PredKind::kGe: return Predicate::Ge(vars, bound);
    default: return Predicate::Le(vars, bound);
  }
}

}  // namespace

const std::optional<std::vector<SymExpr>>& InferenceContext::input_elements(int i) const {
  return node_.input(i)->elements();
}

std::optional<std::vector<int64_t>> InferenceContext::input_constant_ints(int i) const {
  if (!HasInput(i)) return std::nullopt;
  const auto& elements = input_elements(i);
  if (!elements) return std::nullopt;
  std::vector<int64_t> out;
  for (SymExpr e : *elements) {
    std::optional<int64_t> c = e.AsConst();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

const Tensor* InferenceContext::input_constant(int i) const {
  return HasInput(i) ? node_.input(i)->constant() : nullptr;
}

void InferenceContext::SetOutput(int i, TensorType type, std::optional<std::vector<SymExpr>> elements) {
  Value* out = node_.output(i);
  if (elements) {
    std::optional<int64_t> n = type.NumElements().AsConst();
    if (!n || *n != static_cast<int64_t>(elements->size())) elements.reset();
  }
  // Shape values are knowledge, not semantics: one too large for the
  // recursive SymExpr algorithms (sym_expr.h) is forgotten, and the value is
  // computed at run time like any other tensor.
  if (elements && std::any_of(elements->begin(), elements->end(), [](const SymExpr& e) {
        return e.depth() > kMaxSymExprDepth || e.tree_size() > kMaxSymExprTreeSize;
      })) {
    elements.reset();
  }
  out->set_type(std::move(type));
  out->set_elements(std::move(elements));
}

absl::Status InferenceContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name(), "' (", node_.op_type(), "): ", message));
}

Answer InferenceContext::Ask(const Predicate& question, absl::string_view reason) {
  return env_.Query(question, Provenance{"shape-inference", node_.name(), std::string(reason)});
}

absl::StatusOr<bool> InferenceContext::Decide(const Predicate& question, absl::string_view reason) {
  Answer a = Ask(question, reason);
  if (a == Answer::kUnknown) {
    return Error(absl::StrCat("cannot decide whether ", question.ToString(), " (", reason,
                              ") over the declared ranges; declare narrower --dim ranges or "
                              "specialize"));
  }
  return IsTrue(a);
}

SymExpr InferenceContext::SimplifiedMin(SymExpr a, SymExpr b) {
  if (a == b) return a;
  if (a.IsConst() && b.IsConst()) return std::min(*a.AsConst(), *b.AsConst());
  if (env_.CanProve(Predicate::Le(a, b))) return a;
  if (env_.CanProve(Predicate::Le(b, a))) return b;
  return Min(a, b);
}

SymExpr InferenceContext::SimplifiedMax(SymExpr a, SymExpr b) {
  if (a == b) return a;
  if (a.IsConst() && b.IsConst()) return std::max(*a.AsConst(), *b.AsConst());
  if (env_.CanProve(Predicate::Ge(a, b))) return a;
  if (env_.CanProve(Predicate::Ge(b, a))) return b;
  return Max(a, b);
}

SymExpr InferenceContext::DataDependentDim() {
  return env_.FreshSymbol("dyn", 0, std::numeric_limits<int32_t>::max());
}

absl::Status InferenceContext::NarrowToProve(const Predicate& question, absl::Status error, absl::string_view need) {
  if (narrowing_ == nullptr) return error;
  absl::btree_set<std::string> symbols;
  question.CollectSymbols(&symbols);
  if (symbols.size() > 1) return ConstrainToProve(question, symbols, std::move(error), need);
  if (symbols.size() != 1) return error;
  const std::string& name = *symbols.begin();
  bool undeclared = narrowing_->undeclared.contains(name);
  if (!undeclared && !narrowing_->declared.contains(name)) return error;  // not an input dim
  const SymbolInfo* info = env_.FindSymbol(name);
  if (info == nullptr) return error;
  const int64_t min = info->min;
  std::optional<int64_t> max = WidestProvableMax(env_, name, min, info->max, question);
  if (!max) return error;
  if (!undeclared) {
    // Refuted just past the range (not only unproven): the model's own limit.
    SymExpr sym = SymExpr::Symbol(name);
    ShapeEnv::Scope past = env_.Assume(Predicate::Eq(sym, *max + 1));
    const char* verb = env_.CanProve(Predicate::Not(question)) ? "holds only" : "can be proven only";
    // With `need` the error already says what the node needs; the question
    // restated (`sequence <= 1024`) would only repeat the limit.
    const std::string limit = need.empty() ? absl::StrCat(question.ToString(), " ", verb, " for ", name, " <= ", *max)
                                           : absl::StrCat("the model serves only ", name, " <= ", *max);
    return absl::Status(error.code(), absl::StrCat(error.message(), "; ", limit, "; declare --dim ", name, "=", min,
                                                   "..", *max));
  }
  // The narrowed domain must answer the rule's question by itself (checked
  // under the assumption first: NarrowRange cannot be undone).
  {
    ShapeEnv::Scope narrowed = env_.Assume(Predicate::Le(SymExpr::Symbol(name), *max));
    if (!env_.CanProve(question)) return error;
  }
  std::string note = absl::StrCat("dim '", name, "' limited to ", min, "..", *max, ": node '", node_.name(), "' (",
                                  node_.op_type(), ") ",
                                  need.empty() ? absl::StrCat("needs ", question.ToString()) : std::string(need),
                                  "; declare --dim ", name, "=lo..hi to choose a range");
  // The env keeps the note with the range, so a request outside it is
  // refused naming the node that limits the dim (runtime/README.md).
  if (absl::Status s = env_.NarrowRange(name, min, *max, note); !s.ok()) return Error(s.message());
  narrowing_->notes.push_back(std::move(note));
  return absl::OkStatus();
}

absl::Status InferenceContext::ConstrainToProve(const Predicate& question, const absl::btree_set<std::string>& symbols,
                                                absl::Status error, absl::string_view need) {
  if (!IsOrderQuestion(question)) return error;  // equalities between dims stay errors (a broadcast)
  std::vector<std::string> declared;
  for (const std::string& name : symbols) {
    if (narrowing_->undeclared.contains(name)) continue;
    if (!narrowing_->declared.contains(name)) return error;  // dyn<n>, unk<n>: not an input dim
    declared.push_back(name);
  }
  // The relation must leave some point of the domain, and both ends of every
  // declared range: a declared range is the caller's promise to send those
  // values, so a relation that excludes one of them is the error, as for one dim.
  auto satisfiable_at = [&](std::optional<Predicate> at) {
    std::optional<ShapeEnv::Scope> scope;
    if (at) scope.emplace(&env_, *at);
    return !env_.CanProve(Predicate::Not(question));
  };
  if (!satisfiable_at(std::nullopt)) return error;
  const Predicate relation = ReadableBound(question);
  for (const std::string& name : declared) {
    const SymbolInfo* info = env_.FindSymbol(name);
    for (int64_t end : {info->min, info->max}) {
      if (satisfiable_at(Predicate::Eq(SymExpr::Symbol(name), end))) continue;
      return absl::Status(error.code(),
                          absl::StrCat(error.message(), "; the model serves only ", relation.ToString(),
                                       ", which no request with ", name, " = ", end,
                                       " meets within the declared ranges; declare --dim ranges inside it"));
    }
  }
  std::vector<std::string> quoted;
  for (const std::string& name : symbols) quoted.push_back(absl::StrCat("'", name, "'"));
  std::string note = absl::StrCat("dims ", absl::StrJoin(quoted, " and "), " limited to ", relation.ToString(),
                                  ": node '", node_.name(), "' (", node_.op_type(), ") ",
                                  need.empty() ? absl::StrCat("needs ", question.ToString()) : std::string(need),
                                  "; declare --dim ranges inside it to choose");
  if (absl::Status s = env_.AddDomainConstraint({relation, note}); !s.ok()) return Error(s.message());
  // Each undeclared dim's range shrinks to the values the relation leaves it
  // (past_sequence + sequence <= 1024 with sequence >= 1: past_sequence <=
  // 1023), the smallest upper bound the env proves: range analysis then sees
  // what Z3 would, and `inspect` shows it.
  for (const std::string& name : symbols) {
    if (!narrowing_->undeclared.contains(name)) continue;
    const SymbolInfo* info = env_.FindSymbol(name);
    const SymExpr sym = SymExpr::Symbol(name);
    int64_t lo = info->min, hi = info->max;  // sym <= hi is proven (the range)
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (env_.CanProve(Predicate::Le(sym, mid))) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (hi < info->max) {
      if (absl::Status s = env_.NarrowRange(name, info->min, hi, note); !s.ok()) return Error(s.message());
    }
  }
  if (!env_.CanProve(question)) return error;  // the relation implies it; never expected
  narrowing_->notes.push_back(std::move(note));
  return absl::OkStatus();
}

void InferenceContext::Note(absl::string_view text) {
  if (narrowing_ == nullptr) return;
  std::string note = absl::StrCat("node '", node_.name(), "' (", node_.op_type(), ") ", text);
  // Inference may run again over a narrowed domain (the importer): one note per fact.
  if (std::find(narrowing_->notes.begin(), narrowing_->notes.end(), note) != narrowing_->notes.end()) return;
  narrowing_->notes.push_back(std::move(note));
}

absl::Status InferNode(Node& node, ShapeEnv& env, int opset, DomainNarrowing* narrowing) {
  const OpInfo* schema = FindOp(node.op_type());
  InferenceContext ctx(node, env, opset, narrowing);
  if (schema == nullptr) return ctx.Error(absl::StrCat("unsupported op at opset ", opset));
  int present = node.num_inputs();
  while (present > 0 && node.input(present - 1) == nullptr) --present;
  if (present < schema->min_inputs || present > schema->max_inputs) {
    return ctx.Error(absl::StrCat("expects ", schema->min_inputs,
                                  schema->max_inputs == OpInfo::kVariadic
                                      ? std::string(" or more")
                                      : absl::StrCat("..", schema->max_inputs),
                                  " inputs, got ", present));
  }
  for (int i = 0; i < schema->min_inputs; ++i) {
    if (node.input(i) == nullptr) return ctx.Error(absl::StrCat("required input ", i, " is missing"));
  }
  if (node.num_outputs() < schema->min_outputs || node.num_outputs() > schema->max_outputs) {
    return ctx.Error(absl::StrCat("expects ", schema->min_outputs, "..", schema->max_outputs,
                                  " outputs, got ", node.num_outputs()));
  }
  if (absl::Status s = schema->infer(ctx); !s.ok()) return s;
  for (const Value* out : node.outputs()) {
    for (size_t k = 0; k < out->type().shape.size(); ++k) {
      const SymExpr& d = out->type().shape[k];
      if (d.depth() > kMaxSymExprDepth || d.tree_size() > kMaxSymExprTreeSize) {
        return ctx.Error(absl::StrCat("dim ", k, " of output '", out->name(), "' is an expression ", d.depth(),
                                      " levels deep with ", d.tree_size(),
                                      " nodes as a tree, beyond the limit of ", kMaxSymExprDepth, " levels and ",
                                      kMaxSymExprTreeSize, " nodes (kMaxSymExprDepth, kMaxSymExprTreeSize)"));
      }
    }
  }
  // Catch-all for bad attribute/input values (negative repeats, shapes, ...):
  // no rule may produce a provably negative dim.
  for (const Value* out : node.outputs()) {
    for (SymExpr d : out->type().shape) {
      if (std::optional<int64_t> c = d.AsConst(); c && *c < 0) {
        return ctx.Error(absl::StrCat("output '", out->name(), "' would have a negative dim: ",
                                      out->type().ToString()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status InferShapes(Graph& graph, ShapeEnv& env) {
  for (Node* node : graph.nodes()) {
    if (absl::Status s = InferNode(*node, env, graph.opset()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shapeshift
