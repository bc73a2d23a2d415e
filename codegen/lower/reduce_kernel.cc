// Reduction groups: Reduce{Sum,Mean,Max,Min,Prod,SumSquare,L1,L2,LogSum,
// LogSumExp} over any set of axes, and ArgMax/ArgMin, with the group's
// elementwise prologue (computed per input element: mean pooling's x * mask)
// and epilogue (per reduced element). Three kernel forms:
//
//  - lines: one parallel iteration per reduced element, an inner loop over
//    the elements it reduces into scalar accumulators. Over trailing axes the
//    inner loop reads a contiguous row (the form the group always had);
//    otherwise it reads at the reduced axes' strides (row_loop.h).
//  - columns: when the last axis is kept (mean pooling's sum over the
//    sequence axis of [batch, sequence, hidden]), one parallel iteration per
//    element of the kept axes before the trailing kept run, a sequential loop
//    over the reduced elements and, innermost, a contiguous (vectorized) loop
//    over the trailing kept run that combines each input row into a row of
//    partial results held in the group's output; a last loop finishes them
//    and applies the epilogue. One pass over the input, read in memory order.
//  - noop (noop_with_empty_axes, no axes): the identity, one elementwise loop.
//
// The semantics are graph/reference/reduce.cc's: NaN propagates through
// max and min, an empty reduction gives the initial value finished (sum 0,
// max -inf, min +inf, prod 1, mean NaN, log-sum -inf), LogSumExp shifts by
// the maximum when it is finite; integers accumulate in i64 and wrap like
// the interpreter's int64 accumulator cast to the element type. ArgMax and
// ArgMin take the first index of the extreme value (the last with
// select_last_index), never a NaN unless it is the line's first element
// (then index 0): the interpreter's and ONNX Runtime's `v > best` scan.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"
#include "codegen/lower/row_loop.h"
#include "graph/dtype.h"

namespace shapeshift::codegen::lower {
namespace {

absl::Status GroupError(const passes::Group& g, absl::string_view why) {
  return lower::GroupError(g, g.reduction.reduce, why);
}

absl::Status Unsupported(const passes::Group& g, absl::string_view why) {
  return absl::UnimplementedError(GroupError(g, why).message());
}

enum class Kind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare, kArgMax, kArgMin };

std::optional<Kind> KindOf(const std::string& op) {
  static const std::pair<const char*, Kind> kKinds[] = {
      {"ReduceSum", Kind::kSum},         {"ReduceMean", Kind::kMean},   {"ReduceMax", Kind::kMax},
      {"ReduceMin", Kind::kMin},         {"ReduceProd", Kind::kProd},   {"ReduceL1", Kind::kL1},
      {"ReduceL2", Kind::kL2},           {"ReduceLogSum", Kind::kLogSum}, {"ReduceLogSumExp", Kind::kLogSumExp},
      {"ReduceSumSquare", Kind::kSumSquare}, {"ArgMax", Kind::kArgMax}, {"ArgMin", Kind::kArgMin}};
  for (const auto& [name, kind] : kKinds) {
    if (op == name) return kind;
  }
  return std::nullopt;
}

bool SameShape(ShapeEnv* env, const std::vector<SymExpr>& a, const std::vector<SymExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && !env->CanProveEqual(a[i], b[i])) return false;
  }
  return true;
}

Value IntConst(ScalarType t, int64_t v) { return t == ScalarType::kI64 ? I64(v) : Cast(t, I64(v)); }
Value Typed(ScalarType t, double f, int64_t i) { return t == ScalarType::kF32 ? F32(f) : IntConst(t, i); }
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// How one Reduce* kind accumulates (in `acc`, f32 or i64) and finishes.
struct Accumulation {
  ScalarType acc = ScalarType::kF32;
  ReduceOp op = ReduceOp::kSum;
  bool negated = false;  // min as max of the order-reversed values: -x (f32), -1 - x (integers)
};

Accumulation AccumulationOf(Kind kind, ScalarType in) {
  Accumulation a;
  a.acc = in == ScalarType::kF32 ? ScalarType::kF32 : ScalarType::kI64;
  if (kind == Kind::kMax || kind == Kind::kMin) a.op = ReduceOp::kMax;
  if (kind == Kind::kProd) a.op = ReduceOp::kProd;
  a.negated = kind == Kind::kMin;
  return a;
}

// -x for f32, -1 - x (bitwise not: no overflow) for integers: reverses the order.
Value Reverse(Value x) { return x->type == ScalarType::kF32 ? Unary(UnaryOp::kNeg, x) : IntConst(x->type, -1) - x; }

// The value element x contributes (x already in the accumulation type).
Value Contribution(Kind kind, const Accumulation& a, Value x) {
  switch (kind) {
    case Kind::kSumSquare:
    case Kind::kL2: return x * x;
    case Kind::kL1: return Unary(UnaryOp::kAbs, x);
    default: return a.negated ? Reverse(x) : x;
  }
}

// The reduced value from the accumulated `acc` over `count` elements.
Value Finish(Kind kind, const Accumulation& a, Value acc, SymExpr count) {
  if (a.negated) acc = Reverse(acc);
  switch (kind) {
    case Kind::kMean:
      return a.acc == ScalarType::kF32 ? acc / Cast(ScalarType::kF32, IndexValue(count)) : acc / IndexValue(count);
    case Kind::kL2: return Unary(UnaryOp::kSqrt, acc);
    case Kind::kLogSum: return Unary(UnaryOp::kLog, acc);
    default: return acc;
  }
}

Value Initial(const Accumulation& a) {
  switch (a.op) {
    case ReduceOp::kSum: return Typed(a.acc, 0, 0);
    case ReduceOp::kProd: return Typed(a.acc, 1, 1);
    case ReduceOp::kMax: break;
  }
  return Typed(a.acc, -kInf, kI64Min);
}

// The multi-index over the reduced shape of the element whose kept input
// axes have indices `kept` (in order): kept dims in order, 0 for reduced
// dims kept as 1.
std::vector<SymExpr> ReducedIndex(const std::vector<bool>& reduced, bool keepdims, const std::vector<SymExpr>& kept) {
  std::vector<SymExpr> idx;
  size_t next = 0;
  for (bool r : reduced) {
    if (!r) {
      idx.push_back(kept[next++]);
    } else if (keepdims) {
      idx.push_back(0);
    }
  }
  return idx;
}

struct Plan {
  const Node* reduce = nullptr;
  const GraphValue* in = nullptr;
  const GraphValue* reduced = nullptr;
  Kind kind = Kind::kSum;
  ScalarType in_type = ScalarType::kF32;
  ScalarType out_type = ScalarType::kF32;
  std::vector<int64_t> axes;
  std::vector<bool> is_reduced;
  bool keepdims = true;
};

absl::Status StoreOutputs(const passes::Group& g, ShapeEnv* env, KernelBuilder& b, const Plan& plan,
                          const std::vector<SymExpr>& out_idx, SymExpr out_linear, std::vector<Stmt>* body) {
  for (const GraphValue* out : g.outputs) {
    if (!SameShape(env, out->type().shape, plan.reduced->type().shape)) {
      return GroupError(g, absl::StrCat("output '", out->name(), "' does not have the reduced shape"));
    }
    SS_ASSIGN_OR_RETURN(value, b.em.Emit(out, out_idx));
    SS_ASSIGN_OR_RETURN(buffer, b.em.OutputBuffer(out));
    body->push_back(Store(buffer, out_linear, value));
  }
  return absl::OkStatus();
}

// ArgMax/ArgMin of line `loop` (x its element): the first (or last) index
// holding the largest non-NaN value, 0 when the first element is NaN.
std::vector<Stmt> ArgStatements(const Plan& plan, const RowLoop& loop, Value x, bool last) {
  Value v = plan.kind == Kind::kArgMin ? Reverse(x) : x;
  const ScalarType t = v->type;
  const Value j = IndexValue(SymExpr::Symbol(kInnerVar));
  std::vector<Stmt> body;
  std::vector<Stmt> scan;
  if (t == ScalarType::kF32) {
    const Value nan = Compare(CompareOp::kNe, v, v);
    body.push_back(Accumulator("nan_first", I64(0)));
    scan.push_back(Accumulate("nan_first", ReduceOp::kMax,
                              Select(Compare(CompareOp::kEq, j, I64(0)), Select(nan, I64(1), I64(0)), I64(0))));
    scan.push_back(Accumulate("best", ReduceOp::kMax, Select(nan, F32(-kInf), v)));
  } else {
    scan.push_back(Accumulate("best", ReduceOp::kMax, v));
  }
  body.insert(body.begin(), Accumulator("best", Typed(t, -kInf, t == ScalarType::kI64 ? kI64Min : std::numeric_limits<int32_t>::min())));
  body.push_back(Loop(kInnerVar, 0, loop.n, std::move(scan)));
  body.push_back(Let("best_value", Var("best", t)));
  // The first index is -max(-j) over the matches, the last max(j).
  const Value hit = Compare(CompareOp::kEq, v, Var("best_value", t));
  body.push_back(Accumulator("at", I64(kI64Min)));
  body.push_back(Loop(kInnerVar, 0, loop.n,
                      {Accumulate("at", ReduceOp::kMax,
                                  last ? Select(hit, j, I64(-1)) : Select(hit, I64(0) - j, I64(kI64Min)))}));
  Value index = last ? Var("at", ScalarType::kI64) : I64(0) - Var("at", ScalarType::kI64);
  if (t == ScalarType::kF32) {
    index = Select(Compare(CompareOp::kGt, Var("nan_first", ScalarType::kI64), I64(0)), I64(0), index);
  }
  body.push_back(Let("reduced", index));
  return body;
}

// The lines form (any axes; contiguous rows when they are trailing).
absl::StatusOr<KernelCall> LowerLines(const passes::Group& g, ShapeEnv* env, const Plan& plan) {
  KernelBuilder b(env, g.nodes, absl::StrCat("reduce_", plan.reduce->op_type()));
  RowLoop loop = MakeLineLoop(&b.call->kernel, &b.em, plan.in->type().shape, plan.axes);
  SS_ASSIGN_OR_RETURN(x, b.em.Emit(plan.in, loop.idx));
  std::vector<Stmt> body;
  if (plan.kind == Kind::kArgMax || plan.kind == Kind::kArgMin) {
    absl::StatusOr<int64_t> last = plan.reduce->attrs().GetInt("select_last_index", 0);
    if (!last.ok()) return last.status();
    body = ArgStatements(plan, loop, x, *last != 0);
  } else {
    const Accumulation a = AccumulationOf(plan.kind, plan.in_type);
    if (x->type != a.acc) x = Cast(a.acc, x);
    Value reduced;
    if (plan.kind == Kind::kLogSumExp) {
      // exp(x - m) summed, m the maximum when finite (m - m == 0), else 0.
      body = {Accumulator("row_max", F32(-kInf)),
              Loop(kInnerVar, 0, loop.n, {Accumulate("row_max", ReduceOp::kMax, x)}),
              Let("shift", Select(Compare(CompareOp::kEq, Var("row_max", ScalarType::kF32) - Var("row_max", ScalarType::kF32),
                                          F32(0)),
                                  Var("row_max", ScalarType::kF32), F32(0))),
              Accumulator("acc", F32(0)),
              Loop(kInnerVar, 0, loop.n,
                   {Accumulate("acc", ReduceOp::kSum, Exp(x - Var("shift", ScalarType::kF32)))})};
      reduced = Unary(UnaryOp::kLog, Var("acc", ScalarType::kF32)) + Var("shift", ScalarType::kF32);
    } else {
      body = {Accumulator("acc", Initial(a)),
              Loop(kInnerVar, 0, loop.n, {Accumulate("acc", a.op, Contribution(plan.kind, a, x))})};
      reduced = Finish(plan.kind, a, Var("acc", a.acc), loop.n);
    }
    if (reduced->type != plan.out_type) reduced = Cast(plan.out_type, reduced);
    body.push_back(Let("reduced", reduced));
  }
  b.em.Override(plan.reduced, Var("reduced", plan.out_type));
  std::vector<SymExpr> out_idx = ReducedIndex(plan.is_reduced, plan.keepdims, loop.outer);
  SS_RETURN_IF_ERROR(StoreOutputs(g, env, b, plan, out_idx, b.call->kernel.ParallelVar(), &body));
  b.call->kernel.body = std::move(body);
  return b.Take();
}

// The columns form: the last axis is kept. Partial results live in `acc_out`
// (a group output of the accumulation type) while the reduced elements are
// combined into them row by row.
absl::StatusOr<KernelCall> LowerColumns(const passes::Group& g, ShapeEnv* env, const Plan& plan,
                                        const GraphValue* acc_out) {
  KernelBuilder b(env, g.nodes, absl::StrCat("reduce_columns_", plan.reduce->op_type()));
  Kernel& k = b.call->kernel;
  const std::vector<SymExpr> dims = b.em.dims().Bind(plan.in->type().shape);
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t run = rank;  // the trailing kept run is [run, rank)
  while (run > 0 && !plan.is_reduced[run - 1]) --run;
  std::vector<SymExpr> outer_dims, reduced_dims, run_dims;
  for (int64_t d = 0; d < rank; ++d) {
    (d >= run ? run_dims : plan.is_reduced[d] ? reduced_dims : outer_dims).push_back(dims[d]);
  }
  SymExpr outer = 1, count = 1, width = 1;
  for (SymExpr d : outer_dims) outer = outer * d;
  for (SymExpr d : reduced_dims) count = count * d;
  for (SymExpr d : run_dims) width = width * d;
  const SymExpr p = k.ParallelVar();
  const SymExpr c = SymExpr::Symbol(kInnerVar);
  const SymExpr r = SymExpr::Symbol("r");
  std::vector<SymExpr> outer_idx = Delinearize(p, outer_dims);
  std::vector<SymExpr> reduced_idx = Delinearize(r, reduced_dims);
  std::vector<SymExpr> run_idx = Delinearize(c, run_dims);
  std::vector<SymExpr> idx;
  std::vector<SymExpr> kept_idx;
  SymExpr prefix = 0;  // the row-major position of the axes before the run
  size_t next_outer = 0, next_reduced = 0;
  for (int64_t d = 0; d < run; ++d) {
    idx.push_back(plan.is_reduced[d] ? reduced_idx[next_reduced++] : outer_idx[next_outer++]);
    if (!plan.is_reduced[d]) kept_idx.push_back(idx.back());
    prefix = prefix * dims[d] + idx.back();
  }
  for (SymExpr e : run_idx) {
    idx.push_back(e);
    kept_idx.push_back(e);
  }
  k.parallel_extent = outer;
  b.em.SetDomain(plan.in->type().shape, idx, prefix * width + c);
  SS_ASSIGN_OR_RETURN(x, b.em.Emit(plan.in, idx));
  const Accumulation a = AccumulationOf(plan.kind, plan.in_type);
  if (x->type != a.acc) x = Cast(a.acc, x);
  SS_ASSIGN_OR_RETURN(partial, b.em.OutputBuffer(acc_out));
  const SymExpr at = p * width + c;
  Value combined;
  Value old = Load(partial, at);
  Value v = Contribution(plan.kind, a, x);
  switch (a.op) {
    case ReduceOp::kSum: combined = old + v; break;
    case ReduceOp::kProd: combined = old * v; break;
    case ReduceOp::kMax: combined = Max(old, v); break;
  }
  std::vector<Stmt> body = {
      Loop(kInnerVar, 0, width, {Store(partial, at, Initial(a))}),
      Loop("r", 0, count, {Loop(kInnerVar, 0, width, {Store(partial, at, combined)})}),
  };
  Value reduced = Finish(plan.kind, a, Var("acc", a.acc), count);
  if (reduced->type != plan.out_type) reduced = Cast(plan.out_type, reduced);
  std::vector<Stmt> finish = {Let("acc", Load(partial, at)), Let("reduced", reduced)};
  b.em.Override(plan.reduced, Var("reduced", plan.out_type));
  // The partial results' buffer is the group output `acc_out`: every
  // output's element is computed from `acc` (a let) before any is stored.
  std::vector<Stmt> stores;
  const std::vector<SymExpr> out_idx = ReducedIndex(plan.is_reduced, plan.keepdims, kept_idx);
  for (const GraphValue* out : g.outputs) {
    if (!SameShape(env, out->type().shape, plan.reduced->type().shape)) {
      return GroupError(g, absl::StrCat("output '", out->name(), "' does not have the reduced shape"));
    }
    SS_ASSIGN_OR_RETURN(value, b.em.Emit(out, out_idx));
    const std::string name = absl::StrCat("y", stores.size());
    finish.push_back(Let(name, value));
    BufferRef buffer = partial;
    if (out != acc_out) {
      SS_ASSIGN_OR_RETURN(other, b.em.OutputBuffer(out));
      buffer = other;
    }
    stores.push_back(Store(buffer, at, Var(name, value->type)));
  }
  for (Stmt& store : stores) finish.push_back(std::move(store));
  body.push_back(Loop(kInnerVar, 0, width, std::move(finish)));
  k.body = std::move(body);
  return b.Take();
}

// noop_with_empty_axes without axes: the identity, with the epilogue.
absl::StatusOr<KernelCall> LowerIdentity(const passes::Group& g, ShapeEnv* env, const Plan& plan) {
  KernelBuilder b(env, g.nodes, absl::StrCat("reduce_noop_", plan.reduce->op_type()));
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, plan.reduced->type().shape, 1);
  SS_ASSIGN_OR_RETURN(x, b.em.Emit(plan.in, loop.idx));
  b.em.Override(plan.reduced, x);
  std::vector<Stmt> stores;
  for (const GraphValue* out : g.outputs) {
    if (!SameShape(env, out->type().shape, plan.reduced->type().shape)) {
      return GroupError(g, absl::StrCat("output '", out->name(), "' does not have the reduced shape"));
    }
    SS_ASSIGN_OR_RETURN(value, b.em.Emit(out, loop.idx));
    SS_ASSIGN_OR_RETURN(buffer, b.em.OutputBuffer(out));
    stores.push_back(Store(buffer, loop.linear, value));
  }
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, std::move(stores))};
  return b.Take();
}

}  // namespace

absl::StatusOr<KernelCall> LowerReduction(const passes::Group& g, ShapeEnv* env) {
  Plan plan;
  plan.reduce = g.reduction.reduce;
  if (plan.reduce == nullptr) return lower::GroupError(g, nullptr, "no reduce node");
  const std::string& op = plan.reduce->op_type();
  std::optional<Kind> kind = KindOf(op);
  if (!kind) return Unsupported(g, absl::StrCat(op, " is not a supported reduction"));
  plan.kind = *kind;
  plan.in = plan.reduce->input(0);
  plan.reduced = plan.reduce->output(0);
  plan.keepdims = g.reduction.keepdims;
  SS_ASSIGN_OR_RETURN(in_type, KernelType(plan.in->type().dtype, "input '" + plan.in->name() + "'"));
  SS_ASSIGN_OR_RETURN(out_type, KernelType(plan.reduced->type().dtype, "output '" + plan.reduced->name() + "'"));
  plan.in_type = in_type;
  plan.out_type = out_type;
  if (g.reduction.noop) return LowerIdentity(g, env, plan);
  if (in_type == ScalarType::kBool) return Unsupported(g, "bool reductions are not compiled");
  // Integers: the kinds whose result is the i64 accumulator (and Mean, its
  // truncating quotient), as the interpreter computes them.
  const bool exact = plan.kind != Kind::kL2 && plan.kind != Kind::kLogSum && plan.kind != Kind::kLogSumExp;
  if (in_type != ScalarType::kF32 && !exact) {
    return Unsupported(g, absl::StrCat(op, " is compiled for f32 only, not ", DTypeName(plan.in->type().dtype)));
  }
  const int64_t rank = plan.in->type().rank();
  plan.axes = passes::ReducedAxes(g.reduction, rank);
  plan.is_reduced.assign(rank, false);
  for (int64_t a : plan.axes) {
    if (a < 0 || a >= rank) return GroupError(g, absl::StrCat("axis ", a, " is outside the input's rank"));
    plan.is_reduced[a] = true;
  }
  // Columns when the last axis is kept, the trailing kept run is not a
  // handful of elements, the op needs one pass and an output can hold the
  // partial results.
  const bool arg = plan.kind == Kind::kArgMax || plan.kind == Kind::kArgMin;
  if (!plan.axes.empty() && rank > 0 && !plan.is_reduced[rank - 1] && !arg && plan.kind != Kind::kLogSumExp) {
    SymExpr width = 1;
    for (int64_t d = rank - 1; d >= 0 && !plan.is_reduced[d]; --d) width = width * plan.in->type().shape[d];
    const std::optional<int64_t> w = width.AsConst();
    const ScalarType acc = AccumulationOf(plan.kind, in_type).acc;
    const GraphValue* acc_out = nullptr;
    for (const GraphValue* out : g.outputs) {
      if (acc_out == nullptr && out->type().dtype == (acc == ScalarType::kF32 ? DType::kF32 : DType::kI64)) {
        acc_out = out;
      }
    }
    if (acc_out != nullptr && !(w && *w < 8)) return LowerColumns(g, env, plan, acc_out);
  }
  return LowerLines(g, env, plan);
}

}  // namespace shapeshift::codegen::lower
