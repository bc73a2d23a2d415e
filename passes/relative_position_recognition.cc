#include "passes/relative_position_recognition.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"
#include "passes/op_classes.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "relative-position-recognition";
constexpr char kExpand[] = "RelativePositionExpand";
constexpr int kMaxDepth = 16;          // views and shifts walked through to a Range
constexpr int kMaxRegionNodes = 256;   // ops cloned onto the differences per region
constexpr int kMaxRematNodes = 16;     // ops a consumer recomputes per element

Provenance Why(const Node& n, const char* reason) { return Provenance{kPass, n.name(), reason}; }

bool IsIntegerType(DType t) { return t == DType::kI64 || t == DType::kI32; }

// A position vector: element k along `axis` (from the end; every other dim
// the constant 1) is start + k + the shifts, from Range(start, limit, 1).
struct Ramp {
  int64_t axis = 0;
  SymExpr length;
  Value* start = nullptr;
  Value* limit = nullptr;
  std::vector<std::pair<int, Value*>> shifts;  // (+1 | -1, one-element value)
};

std::optional<Ramp> RampOf(ShapeEnv& env, Value* v, int depth) {
  Node* p = v == nullptr ? nullptr : v->producer();
  if (p == nullptr || depth > kMaxDepth || !IsIntegerType(v->type().dtype)) return std::nullopt;
  const std::vector<SymExpr>& shape = v->type().shape;
  const std::string& op = p->op_type();
  if (op == "Range") {
    if (!KnownScalar(p->input(0)) || !KnownScalar(p->input(1)) || KnownScalar(p->input(2)) != SymExpr(1) ||
        shape.size() != 1) {
      return std::nullopt;
    }
    return Ramp{1, shape[0], p->input(0), p->input(1), {}};
  }
  std::optional<int64_t> axis = SoleNonUnitAxis(shape);
  if (!axis) return std::nullopt;
  if (IsViewOp(*p)) {
    std::optional<Ramp> inner = RampOf(env, p->input(0), depth + 1);
    if (!inner || !DimsEqual(env, shape[shape.size() - *axis], inner->length,
                             Why(*p, "a view keeps the position vector's length"))) {
      return std::nullopt;
    }
    inner->axis = *axis;
    return inner;
  }
  if (op == "Add" || op == "Sub") {
    for (int i = 0; i < (op == "Add" ? 2 : 1); ++i) {
      Value* shift = p->input(1 - i);
      if (!KnownScalar(shift) || shift->type().dtype != v->type().dtype) continue;
      std::optional<Ramp> r = RampOf(env, p->input(i), depth + 1);
      if (!r || r->axis != *axis) continue;
      r->shifts.emplace_back(op == "Add" ? 1 : -1, shift);
      return r;
    }
  }
  return std::nullopt;
}

// D = cols - rows (sign +1: element [i, j] is c + (j - i)) or rows - cols
// (sign -1: c - (j - i)), cols a ramp along the last axis (length T), rows
// along the one before it (length S), every other dim of D the constant 1.
struct Difference {
  Node* sub = nullptr;
  Ramp rows, cols;
  int sign = 1;
};

std::optional<Difference> DifferenceAt(ShapeEnv& env, Node* sub) {
  if (sub->op_type() != "Sub" || sub->num_inputs() != 2) return std::nullopt;
  const TensorType& type = sub->output(0)->type();
  if (!IsIntegerType(type.dtype) || type.rank() < 2) return std::nullopt;
  for (int64_t d = 0; d + 2 < type.rank(); ++d) {
    if (type.shape[d].AsConst() != 1) return std::nullopt;
  }
  std::optional<Ramp> a = RampOf(env, sub->input(0), 0);
  std::optional<Ramp> b = a ? RampOf(env, sub->input(1), 0) : std::nullopt;
  if (!a || !b) return std::nullopt;
  Difference d{sub, {}, {}, 1};
  if (a->axis == 1 && b->axis == 2) {
    d.cols = *a;
    d.rows = *b;
  } else if (a->axis == 2 && b->axis == 1) {
    d.rows = *a;
    d.cols = *b;
    d.sign = -1;
  } else {
    return std::nullopt;
  }
  const SymExpr rows = type.shape[type.rank() - 2], cols = type.shape.back();
  if (!DimsEqual(env, d.cols.length, cols, Why(*sub, "the column positions span the last axis")) ||
      !DimsEqual(env, d.rows.length, rows, Why(*sub, "the row positions span the axis before it")) ||
      !IsTrue(env.Query(Predicate::Ge(rows, 1), Why(*sub, "every difference j - i occurs: rows >= 1"))) ||
      !IsTrue(env.Query(Predicate::Ge(cols, 1), Why(*sub, "every difference j - i occurs: columns >= 1")))) {
    return std::nullopt;
  }
  return d;
}

bool IsUnit(ShapeEnv& env, SymExpr d) { return d.AsConst() == 1 || env.CanProveEqual(d, 1); }

// The one value every element of `v` has, as a one-element value, when `v`
// is one (any shape of size 1), a ConstantOfShape, or an Expand of one.
std::optional<Value*> UniformSource(Value* v, int depth = 0) {
  if (v == nullptr || depth > kMaxDepth) return std::nullopt;
  if (v->is_constant() && v->constant()->num_elements() == 1) return v;
  if (KnownScalar(v)) return v;
  bool one = true;
  for (SymExpr d : v->type().shape) one = one && d.AsConst() == 1;
  if (one) return v;  // one element, computed at run time
  Node* p = v->producer();
  if (p == nullptr) return std::nullopt;
  if (p->op_type() == "ConstantOfShape") return v;  // handled by the caller: its `value`
  if (p->op_type() == "Expand") return UniformSource(p->input(0), depth + 1);
  return std::nullopt;
}

// A member of the region: S at `s_axis`, T at `s_axis + 1` of the value.
struct Member {
  int64_t s_axis = 0;
  Value* clone = nullptr;  // the value with S and T replaced by one axis of S + T - 1
};

class RegionRewriter {
 public:
  RegionRewriter(Graph& graph, ShapeEnv& env, const Difference& d)
      : graph_(graph), env_(env), d_(d), b_(graph, env) {
    const TensorType& t = d.sub->output(0)->type();
    rows_ = t.shape[t.rank() - 2];
    cols_ = t.shape.back();
  }

  // Grows the region from the difference, in topological order. False when
  // nothing past the difference joined (rewriting it alone gains nothing).
  bool Grow(const std::vector<Node*>& order) {
    if (IsGraphOutput(graph_, d_.sub->output(0))) return false;
    members_[d_.sub->output(0)] = Member{d_.sub->output(0)->type().rank() - 2, nullptr};
    bool after = false;
    for (Node* node : order) {
      if (node == d_.sub) {
        after = true;
        continue;
      }
      if (!after || static_cast<int>(nodes_.size()) >= kMaxRegionNodes) continue;
      bool reads_region = false;
      for (int i = 0; i < node->num_inputs(); ++i) {
        reads_region = reads_region || (!IsShapeOperand(*node, i) && members_.contains(node->input(i)));
      }
      if (!reads_region || node->num_outputs() != 1 || IsGraphOutput(graph_, node->output(0))) continue;
      if (std::optional<int64_t> s = Admit(*node)) {
        members_[node->output(0)] = Member{*s, nullptr};
        nodes_.push_back(node);
      }
    }
    return !nodes_.empty();
  }

  // Clones the region onto the differences and points every reader outside
  // it at the expansions. False — the graph's meaning untouched, at most a
  // few unread nodes added, which `dce` removes — when a position bound or
  // length is not a known scalar of the positions' dtype, or a clone's shape
  // rule refuses it: nothing is rewired before every expansion is built and
  // has the shape of the value it replaces.
  absl::StatusOr<bool> Rewrite() {
    absl::StatusOr<Value*> rows = Length(d_.rows);
    if (!rows.ok() || *rows == nullptr) return false;
    absl::StatusOr<Value*> cols = Length(d_.cols);
    if (!cols.ok() || *cols == nullptr) return false;
    rows_value_ = *rows;
    cols_value_ = *cols;
    absl::StatusOr<Value*> diffs = Differences();
    if (!diffs.ok() || *diffs == nullptr) return false;
    members_[d_.sub->output(0)].clone = *diffs;
    for (Node* node : nodes_) {
      absl::StatusOr<Value*> c = Clone(*node);
      if (!c.ok()) return false;
      members_[node->output(0)].clone = *c;
    }
    absl::flat_hash_set<const Node*> in_region(nodes_.begin(), nodes_.end());
    in_region.insert(d_.sub);
    std::vector<Value*> values = {d_.sub->output(0)};
    for (Node* node : nodes_) values.push_back(node->output(0));
    std::vector<std::pair<Use, Value*>> rewires;
    for (Value* v : values) {
      std::vector<Use> outside;
      for (const Use& u : v->uses()) {
        if (!in_region.contains(u.user)) outside.push_back(u);
      }
      if (outside.empty()) continue;
      const Member& m = members_.at(v);
      Attributes attrs;
      attrs.Set("axis", m.s_axis);
      absl::StatusOr<Value*> e = Op(*v->producer(), kExpand, {m.clone, rows_value_, cols_value_}, attrs);
      if (!e.ok() || !ShapesEqual(env_, (*e)->type().shape, v->type().shape,
                                  Why(*v->producer(), "the expansion has the value's shape"))) {
        return false;
      }
      for (const Use& u : outside) rewires.emplace_back(u, *e);
    }
    for (const auto& [u, e] : rewires) u.user->SetInput(u.input_index, e);
    if (absl::Status s = graph_.TopologicalSort(); !s.ok()) return s;
    return true;
  }

 private:
  absl::Status Internal(const Node& n, const std::string& what) {
    return absl::InternalError(absl::StrCat(kPass, ": node '", n.name(), "' (", n.op_type(), "): ", what));
  }

  absl::StatusOr<Value*> Op(const Node& at, const std::string& op, std::vector<Value*> inputs, Attributes attrs = {}) {
    absl::StatusOr<Value*> v = b_.Op(op, std::move(inputs), std::move(attrs));
    if (!v.ok()) return Internal(at, absl::StrCat("building ", op, ": ", v.status().message()));
    return *v;
  }

  // `x` (a one-element value) as a scalar.
  absl::StatusOr<Value*> Scalar(const Node& at, Value* x) {
    if (x->type().rank() == 0) return x;
    return Op(at, "Reshape", {x, b_.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {0}, {}))});
  }

  absl::StatusOr<Value*> IntConstant(int64_t v) {
    DType t = d_.sub->output(0)->type().dtype;
    if (t == DType::kI64) return b_.Constant("", Tensor::ScalarI64(v));
    return b_.Constant("", Tensor::FromVector<int32_t>(DType::kI32, {}, {static_cast<int32_t>(v)}));
  }

  // sum of sign * term + c, a scalar shape value.
  absl::StatusOr<Value*> Sum(const std::vector<std::pair<int, Value*>>& terms, int64_t c) {
    const Node& at = *d_.sub;
    Value* acc = nullptr;
    for (const auto& [sign, term] : terms) {
      if (term->type().dtype != d_.sub->output(0)->type().dtype) return nullptr;  // Range needs one dtype
      absl::StatusOr<Value*> t = Scalar(at, term);
      if (!t.ok()) return t.status();
      absl::StatusOr<Value*> next = acc == nullptr ? (sign > 0 ? *t : Op(at, "Neg", {*t}))
                                                   : Op(at, sign > 0 ? "Add" : "Sub", {acc, *t});
      if (!next.ok()) return next.status();
      acc = *next;
    }
    if (acc == nullptr || c != 0) {
      absl::StatusOr<Value*> k = IntConstant(c);
      if (!k.ok()) return k.status();
      if (acc == nullptr) return *k;
      absl::StatusOr<Value*> next = Op(at, "Add", {acc, *k});
      if (!next.ok()) return next.status();
      acc = *next;
    }
    if (!KnownScalar(acc)) return nullptr;  // not known while compiling: the region stays
    return acc;
  }

  // A ramp's length as a scalar shape value: limit - start (nullptr: unknown).
  absl::StatusOr<Value*> Length(const Ramp& r) {
    if (KnownScalar(r.start) == SymExpr(0) && r.limit->type().dtype == d_.sub->output(0)->type().dtype) {
      return Scalar(*d_.sub, r.limit);
    }
    return Sum({{1, r.limit}, {-1, r.start}}, 0);
  }

  // The S + T - 1 differences, element k = the difference at j - i = k - (S - 1):
  // Range(start, limit, sign), shaped like D's leading unit dims + [L].
  absl::StatusOr<Value*> Differences() {
    // c = cols.start + cols.shifts - rows.start - rows.shifts; D[i, j] = sign * (c + j - i).
    const Ramp& rs = d_.rows;
    const Ramp& cs = d_.cols;
    std::vector<std::pair<int, Value*>> start, limit;
    auto add_shifts = [](std::vector<std::pair<int, Value*>>& terms, const Ramp& r, int sign) {
      for (const auto& [s, v] : r.shifts) terms.emplace_back(s * sign, v);
    };
    int64_t start_c = 0;
    if (d_.sign > 0) {  // start = c - (S - 1), limit = c + T
      start = {{1, cs.start}, {-1, rs.limit}};
      add_shifts(start, cs, 1);
      add_shifts(start, rs, -1);
      start_c = 1;
      limit = {{1, cs.limit}, {-1, rs.start}};
      add_shifts(limit, cs, 1);
      add_shifts(limit, rs, -1);
    } else {  // start = (S - 1) - c, limit = -c - T
      start = {{1, rs.limit}, {-1, cs.start}};
      add_shifts(start, rs, 1);
      add_shifts(start, cs, -1);
      start_c = -1;
      limit = {{1, rs.start}, {-1, cs.limit}};
      add_shifts(limit, rs, 1);
      add_shifts(limit, cs, -1);
    }
    absl::StatusOr<Value*> lo = Sum(start, start_c);
    if (!lo.ok() || *lo == nullptr) return lo;
    absl::StatusOr<Value*> hi = Sum(limit, 0);
    if (!hi.ok() || *hi == nullptr) return hi;
    absl::StatusOr<Value*> step = IntConstant(d_.sign);
    if (!step.ok()) return step.status();
    absl::StatusOr<Value*> range = Op(*d_.sub, "Range", {*lo, *hi, *step});
    if (!range.ok()) return range.status();
    const int64_t lead = d_.sub->output(0)->type().rank() - 2;
    if (lead == 0) return *range;
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < lead; ++a) axes.push_back(a);
    return Unsqueeze(*d_.sub, *range, axes);
  }

  Value* AxesConstant(const std::vector<int64_t>& axes) {
    return b_.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(axes.size())}, axes));
  }

  absl::StatusOr<Value*> Unsqueeze(const Node& at, Value* x, const std::vector<int64_t>& axes) {
    if (graph_.opset() >= 13) {
      return Op(at, "Unsqueeze",
                {x, AxesConstant(axes)});
    }
    Attributes attrs;
    attrs.Set("axes", axes);
    return Op(at, "Unsqueeze", {x}, attrs);
  }

  // `x` without its unit axis `axis` (a constant is reshaped, anything else squeezed).
  absl::StatusOr<Value*> DropUnitAxis(const Node& at, Value* x, int64_t axis) {
    std::vector<int64_t> shape;
    const std::vector<SymExpr>& s = x->type().shape;
    for (size_t k = 0; k < s.size(); ++k) {
      if (static_cast<int64_t>(k) != axis) shape.push_back(s[k].AsConst().value_or(-1));
    }
    if (x->is_constant()) {
      absl::StatusOr<Tensor> t = x->constant()->Reshaped(shape);
      if (t.ok()) return b_.Constant("", *std::move(t));
    }
    return Squeeze(at, x, {axis});
  }

  absl::StatusOr<Value*> Squeeze(const Node& at, Value* x, const std::vector<int64_t>& axes) {
    if (graph_.opset() >= 13) {
      return Op(at, "Squeeze",
                {x, AxesConstant(axes)});
    }
    Attributes attrs;
    attrs.Set("axes", axes);
    return Op(at, "Squeeze", {x}, attrs);
  }

  // The axes of an Unsqueeze/Squeeze, normalized against `rank`; nullopt when unknown.
  std::optional<std::vector<int64_t>> Axes(const Node& node, int64_t rank) {
    std::vector<int64_t> axes;
    if (node.num_inputs() > 1 && node.input(1) != nullptr) {
      const auto& e = node.input(1)->elements();
      if (!e) return std::nullopt;
      for (SymExpr a : *e) {
        if (!a.AsConst()) return std::nullopt;
        axes.push_back(*a.AsConst());
      }
    } else {
      absl::StatusOr<std::vector<int64_t>> a = node.attrs().GetInts("axes");
      if (!a.ok()) return std::nullopt;
      axes = *a;
    }
    for (int64_t& a : axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return std::nullopt;
    }
    return axes;
  }

  // True when `v` (not in the region) holds one value for every (i, j):
  // uniform, or a dim of 1 at S's and T's positions (`from_end`: S's
  // position counted from the end of the op's output).
  bool ConstantAlongST(const Node& node, Value* v, int64_t from_end) {
    if (UniformSource(v)) return true;
    const std::vector<SymExpr>& s = v->type().shape;
    const int64_t r = static_cast<int64_t>(s.size());
    if (r >= from_end && !IsUnit(env_, s[r - from_end])) return false;
    if (r >= from_end - 1 && !IsUnit(env_, s[r - from_end + 1])) return false;
    return true;
  }

  // The position of S in `node`'s output when it may join the region.
  std::optional<int64_t> Admit(const Node& node) {
    const std::string& op = node.op_type();
    Value* out = node.output(0);
    const int64_t out_rank = out->type().rank();
    auto keeps_st = [&](int64_t s) {
      return s >= 0 && s + 1 < out_rank &&
             DimsEqual(env_, out->type().shape[s], rows_, Why(node, "the op keeps the relative positions' rows")) &&
             DimsEqual(env_, out->type().shape[s + 1], cols_,
                       Why(node, "the op keeps the relative positions' columns"));
    };
    if (IsElementwiseOp(node) && op != "Expand" && op != "Range" && op != "ConstantOfShape") {
      std::optional<int64_t> from_end;
      for (int i = 0; i < node.num_inputs(); ++i) {
        Value* x = node.input(i);
        if (x == nullptr || IsShapeOperand(node, i) || !members_.contains(x)) continue;
        const int64_t e = x->type().rank() - members_.at(x).s_axis;
        if (from_end && *from_end != e) return std::nullopt;
        from_end = e;
      }
      if (!from_end) return std::nullopt;
      for (int i = 0; i < node.num_inputs(); ++i) {
        Value* x = node.input(i);
        if (x == nullptr || IsShapeOperand(node, i) || members_.contains(x)) continue;
        if (!ConstantAlongST(node, x, *from_end)) return std::nullopt;
      }
      const int64_t s = out_rank - *from_end;
      if (!keeps_st(s)) return std::nullopt;
      return s;
    }
    Value* in = node.num_inputs() > 0 ? node.input(0) : nullptr;
    const bool region_input = in != nullptr && members_.contains(in);
    if (region_input && (op == "Unsqueeze" || op == "Squeeze" || op == "Identity")) {
      const int64_t s_in = members_.at(in).s_axis;
      const int64_t post = in->type().rank() - s_in - 2;
      const int64_t s = out_rank - post - 2;
      if (s < 0) return std::nullopt;
      if (op != "Identity") {
        std::optional<std::vector<int64_t>> axes = Axes(node, op == "Unsqueeze" ? out_rank : in->type().rank());
        if (!axes) return std::nullopt;
        for (int64_t a : *axes) {
          if (a >= (op == "Unsqueeze" ? s : s_in)) return std::nullopt;  // only dims before S move
        }
      }
      if (!ShapesEqual(env_, {in->type().shape.begin() + s_in, in->type().shape.end()},
                       {out->type().shape.begin() + s, out->type().shape.end()},
                       Why(node, "the view keeps the relative positions and the dims after them"))) {
        return std::nullopt;
      }
      return s;
    }
    if (region_input && op == "Slice" && IdentitySlice(node)) return members_.at(in).s_axis;
    if (region_input && op == "Transpose") {
      absl::StatusOr<std::vector<int64_t>> perm = node.attrs().GetInts("perm");
      const int64_t s_in = members_.at(in).s_axis;
      if (!perm.ok() || static_cast<int64_t>(perm->size()) != out_rank) return std::nullopt;
      for (int64_t k = 0; k + 1 < out_rank; ++k) {
        if ((*perm)[k] == s_in) return (*perm)[k + 1] == s_in + 1 ? std::optional<int64_t>(k) : std::nullopt;
      }
      return std::nullopt;
    }
    if (op == "Gather" && node.num_inputs() == 2 && members_.contains(node.input(1)) &&
        !members_.contains(node.input(0))) {
      const int64_t data_rank = node.input(0)->type().rank();
      int64_t axis = node.attrs().GetInt("axis", 0).value_or(0);
      if (axis < 0) axis += data_rank;
      if (axis < 0 || axis >= data_rank) return std::nullopt;
      const int64_t s = axis + members_.at(node.input(1)).s_axis;
      if (!keeps_st(s)) return std::nullopt;
      return s;
    }
    return std::nullopt;
  }

  // A Slice that provably returns its input (every start 0, every step 1,
  // the output's shape the input's): DeBERTa's `rel_pos[:query_size, :]`.
  bool IdentitySlice(const Node& node) {
    if (graph_.opset() < 10 || node.input(1) == nullptr || !node.input(1)->elements()) return false;
    for (SymExpr s : *node.input(1)->elements()) {
      if (s.AsConst() != 0) return false;
    }
    if (node.num_inputs() > 4 && node.input(4) != nullptr) {
      if (!node.input(4)->elements()) return false;
      for (SymExpr s : *node.input(4)->elements()) {
        if (s.AsConst() != 1) return false;
      }
    }
    return ShapesEqual(env_, node.input(0)->type().shape, node.output(0)->type().shape,
                       Why(node, "the slice keeps every row and column"));
  }

  // The clone of a region node, on the S + T - 1 differences.
  absl::StatusOr<Value*> Clone(const Node& node) {
    const std::string& op = node.op_type();
    Value* out = node.output(0);
    const int64_t s_out = members_.at(out).s_axis;
    if (IsElementwiseOp(node)) {
      const int64_t from_end = out->type().rank() - s_out;
      std::vector<Value*> inputs;
      for (int i = 0; i < node.num_inputs(); ++i) {
        Value* x = node.input(i);
        if (x == nullptr || IsShapeOperand(node, i)) {
          inputs.push_back(x);
        } else if (members_.contains(x)) {
          inputs.push_back(members_.at(x).clone);
        } else if (std::optional<Value*> u = UniformSource(x)) {
          absl::StatusOr<Value*> scalar = UniformScalar(node, x, *u);
          if (!scalar.ok()) return scalar.status();
          inputs.push_back(*scalar);
        } else if (x->type().rank() >= from_end - 1) {
          // 1 along T (and S): drop T's unit axis so the rest stays aligned.
          absl::StatusOr<Value*> dropped = DropUnitAxis(node, x, x->type().rank() - from_end + 1);
          if (!dropped.ok()) return dropped.status();
          inputs.push_back(*dropped);
        } else {
          inputs.push_back(x);
        }
      }
      return Op(node, op, std::move(inputs), node.attrs());
    }
    Value* in = node.input(0);
    if (op == "Identity" || op == "Slice") return members_.at(in).clone;
    if (op == "Unsqueeze" || op == "Squeeze") {
      // The axes lie before S (Admit), so the same non-negative axes apply to
      // the clone (one dim shorter after them).
      std::optional<std::vector<int64_t>> axes = Axes(node, op == "Unsqueeze" ? out->type().rank() : in->type().rank());
      if (!axes) return Internal(node, "axes not known");
      if (op == "Unsqueeze") return Unsqueeze(node, members_.at(in).clone, *axes);
      return Squeeze(node, members_.at(in).clone, *axes);
    }
    if (op == "Transpose") {
      const std::vector<int64_t> perm = *node.attrs().GetInts("perm");
      const int64_t s_in = members_.at(in).s_axis;
      std::vector<int64_t> cloned;
      for (size_t k = 0; k < perm.size(); ++k) {
        if (perm[k] == s_in + 1) continue;  // T's axis is gone: L sits at S's place
        cloned.push_back(perm[k] > s_in + 1 ? perm[k] - 1 : perm[k]);
      }
      Attributes attrs = node.attrs();
      attrs.Set("perm", cloned);
      return Op(node, op, {members_.at(in).clone}, attrs);
    }
    if (op == "Gather") return Op(node, op, {node.input(0), members_.at(node.input(1)).clone}, node.attrs());
    return Internal(node, "not a relative-position op");
  }

  // A uniform operand as a scalar of its dtype: the one value it repeats.
  absl::StatusOr<Value*> UniformScalar(const Node& at, Value* x, Value* source) {
    Node* p = source->producer();
    if (p != nullptr && p->op_type() == "ConstantOfShape") {
      Tensor fill = Tensor::Scalar(0.0f);
      if (p->attrs().Has("value")) {
        absl::StatusOr<Tensor> t = p->attrs().GetTensor("value");
        if (!t.ok()) return t.status();
        fill = *std::move(t);
      }
      absl::StatusOr<Tensor> scalar = fill.Reshaped({});
      if (!scalar.ok()) return Internal(at, "ConstantOfShape's value must have one element");
      return b_.Constant("", *std::move(scalar));
    }
    if (source->is_constant()) {
      absl::StatusOr<Tensor> scalar = source->constant()->Reshaped({});
      if (!scalar.ok()) return scalar.status();
      return b_.Constant("", *std::move(scalar));
    }
    return Scalar(at, source);
  }

  Graph& graph_;
  ShapeEnv& env_;
  const Difference& d_;
  GraphBuilder b_;
  SymExpr rows_, cols_;
  Value* rows_value_ = nullptr;
  Value* cols_value_ = nullptr;
  absl::flat_hash_map<const Value*, Member> members_;
  std::vector<Node*> nodes_;  // the region past the difference, topological
};

// --- rematerialization -------------------------------------------------------

bool IsLastAxisSoftmax(const Graph& graph, const Node& node) {
  if (node.op_type() != "Softmax") return false;
  const int64_t rank = node.input(0)->type().rank();
  int64_t axis = node.attrs().GetInt("axis", graph.opset() < 13 ? 1 : -1).value_or(0);
  if (axis < 0) axis += rank;
  return rank >= 1 && axis == rank - 1;
}

// Dim 1 (or absent) along the second-to-last or the last axis of `target`,
// right-aligned: O(size / S) or O(size / T) distinct elements.
bool Thin(const Value* v, const std::vector<SymExpr>& target) {
  const std::vector<SymExpr>& s = v->type().shape;
  const size_t r = s.size();
  if (target.size() < 2 || r > target.size()) return false;
  return r < 2 || s[r - 2].AsConst() == 1 || s[r - 1].AsConst() == 1;
}

bool CollectMask(const Value* v, const std::vector<SymExpr>& target, int depth, std::vector<Node*>& nodes,
                 bool& expands) {
  Node* p = v->producer();
  if (p == nullptr || depth > kMaxDepth || p->num_outputs() != 1) return false;
  if (std::find(nodes.begin(), nodes.end(), p) != nodes.end()) return true;
  if (static_cast<int>(nodes.size()) >= kMaxRematNodes) return false;
  if (p->op_type() == kExpand) {
    nodes.push_back(p);
    expands = true;
    return true;
  }
  if (!IsElementwiseOp(*p) || p->op_type() == "Range" || p->op_type() == "ConstantOfShape") return false;
  nodes.push_back(p);
  for (int i = 0; i < p->num_inputs(); ++i) {
    const Value* x = p->input(i);
    if (x == nullptr || IsShapeOperand(*p, i) || Thin(x, target)) continue;
    if (!CollectMask(x, target, depth + 1, nodes, expands)) return false;
  }
  return true;
}

// The consumers that compute a relative-position value inline: (consumer,
// input index, the DAG's nodes).
struct Remat {
  Node* consumer = nullptr;
  int input = 0;
  std::vector<Node*> nodes;
};

std::optional<Remat> RematAt(const Graph& graph, ShapeEnv& env, Node* node) {
  if (node->op_type() == "Add" && node->num_inputs() == 2 && !IsGraphOutput(graph, node->output(0))) {
    Node* softmax = SingleUser(node->output(0));
    if (softmax == nullptr || !IsLastAxisSoftmax(graph, *softmax)) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      std::vector<Node*> nodes = RelativePositionMaskNodes(node->input(k), node->output(0)->type().shape);
      if (!nodes.empty()) return Remat{node, k, std::move(nodes)};
    }
    return std::nullopt;
  }
  const bool embedding = node->op_type() == "Gather" && node->input(0)->is_constant() &&
                         node->attrs().GetInt("axis", 0).value_or(1) == 0;
  if ((node->op_type() == "Gather" && !embedding) || node->op_type() == "GatherElements") {
    std::vector<Node*> nodes = RelativePositionIndexNodes(node->input(1), env);
    if (!nodes.empty()) return Remat{node, 1, std::move(nodes)};
  }
  return std::nullopt;
}

// Gives `r.consumer` its own copy of the DAG when another node reads any of it.
absl::StatusOr<bool> Rematerialize(Graph& graph, ShapeEnv& env, const Remat& r) {
  absl::flat_hash_set<const Node*> members(r.nodes.begin(), r.nodes.end());
  bool shared = false;
  for (const Node* n : r.nodes) {
    const Value* v = n->output(0);
    shared = shared || IsGraphOutput(graph, v);
    for (const Use& u : v->uses()) shared = shared || (!members.contains(u.user) && u.user != r.consumer);
  }
  if (!shared) return false;
  absl::flat_hash_map<const Value*, Value*> copy;
  // r.nodes lists consumers first: copy in reverse, producers first.
  for (auto it = r.nodes.rbegin(); it != r.nodes.rend(); ++it) {
    Node* n = *it;
    std::vector<Value*> inputs;
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* x = n->input(i);
      auto c = x == nullptr ? copy.end() : copy.find(x);
      inputs.push_back(c == copy.end() ? x : c->second);
    }
    Node* clone = graph.AddNode(n->op_type(), std::move(inputs), 1, n->attrs());
    if (absl::Status s = InferNode(*clone, env, graph.opset()); !s.ok()) {
      return absl::InternalError(absl::StrCat(kPass, ": copying '", n->name(), "' for '", r.consumer->name(),
                                              "': ", s.message()));
    }
    copy[n->output(0)] = clone->output(0);
  }
  r.consumer->SetInput(r.input, copy.at(r.consumer->input(r.input)));
  return true;
}

}  // namespace

std::vector<Node*> RelativePositionMaskNodes(const Value* mask, const std::vector<SymExpr>& scores) {
  std::vector<Node*> nodes;
  bool expands = false;
  if (mask == nullptr || Thin(mask, scores) || !CollectMask(mask, scores, 0, nodes, expands) || !expands) return {};
  return nodes;
}

std::vector<Node*> RelativePositionIndexNodes(const Value* indices, ShapeEnv& env) {
  std::vector<Node*> nodes;
  for (const Value* v = indices;;) {
    Node* p = v->producer();
    if (p == nullptr || (p->op_type() != kExpand && p->op_type() != "Expand") ||
        static_cast<int>(nodes.size()) >= kMaxDepth) {
      return {};
    }
    nodes.push_back(p);
    if (p->op_type() == kExpand) break;
    v = p->input(0);
  }
  // Every element of the positions is read by some index: no dim is 0.
  for (const Node* p : nodes) {
    for (SymExpr d : p->output(0)->type().shape) {
      if (!IsTrue(env.Query(Predicate::Ge(d, 1), Why(*p, "the remap reads every relative position")))) return {};
    }
  }
  return nodes;
}

absl::StatusOr<bool> RecognizeRelativePositions(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  const std::vector<Node*> order = graph.nodes();
  absl::flat_hash_set<const Value*> rewritten;  // differences already cloned
  for (Node* node : order) {
    if (rewritten.contains(node->output(0))) continue;
    std::optional<Difference> d = DifferenceAt(env, node);
    if (!d) continue;
    RegionRewriter region(graph, env, *d);
    if (!region.Grow(order)) continue;
    absl::StatusOr<bool> rewrote = region.Rewrite();
    if (!rewrote.ok()) return rewrote.status();
    rewritten.insert(node->output(0));
    changed = changed || *rewrote;
  }
  for (Node* node : graph.nodes()) {
    std::optional<Remat> r = RematAt(graph, env, node);
    if (!r) continue;
    absl::StatusOr<bool> copied = Rematerialize(graph, env, *r);
    if (!copied.ok()) return copied.status();
    changed = changed || *copied;
  }
  if (changed) {
    if (absl::Status s = graph.TopologicalSort(); !s.ok()) return s;
  }
  return changed;
}

}  // namespace shapeshift::passes
