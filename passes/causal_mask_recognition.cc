#include "passes/causal_mask_recognition.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"
#include "passes/op_classes.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "causal-mask-recognition";
constexpr int kMaxDepth = 16;  // views, shifts and Ands walked through

// A tensor whose element is `offset + k`, k its index along one axis (`axis`
// counted from the end, so right-aligned broadcasting keeps it), every other
// dim the constant 1: a position vector such as Range(past, past + seq)
// unsqueezed to [1, 1, seq, 1].
struct Ramp {
  int64_t axis = 0;  // 1: the last axis, 2: the one before it, ...
  SymExpr offset;
  SymExpr length;
};

std::optional<Ramp> RampOf(ShapeEnv& env, const Value* v, int depth) {
  const Node* p = v == nullptr ? nullptr : v->producer();
  if (p == nullptr || depth > kMaxDepth || !IsInteger(v->type().dtype)) return std::nullopt;
  const std::vector<SymExpr>& shape = v->type().shape;
  const std::string& op = p->op_type();
  if (op == "Range") {
    std::optional<SymExpr> start = KnownScalar(p->input(0));
    std::optional<SymExpr> delta = KnownScalar(p->input(2));
    if (!start || !delta || delta->AsConst() != 1 || shape.size() != 1) return std::nullopt;
    return Ramp{1, *start, shape[0]};
  }
  std::optional<int64_t> axis = SoleNonUnitAxis(shape);
  if (!axis) return std::nullopt;
  if (IsViewOp(*p)) {
    std::optional<Ramp> inner = RampOf(env, p->input(0), depth + 1);
    if (!inner || !DimsEqual(env, shape[shape.size() - *axis], inner->length,
                             Provenance{kPass, p->name(), "a view keeps the position vector's length"})) {
      return std::nullopt;
    }
    return Ramp{*axis, inner->offset, inner->length};
  }
  if (op == "Add" || op == "Sub") {
    for (int i = 0; i < (op == "Add" ? 2 : 1); ++i) {
      std::optional<Ramp> r = RampOf(env, p->input(i), depth + 1);
      std::optional<SymExpr> c = KnownScalar(p->input(1 - i));
      if (!r || !c || r->axis != *axis) continue;
      r->offset = op == "Add" ? r->offset + *c : r->offset - *c;
      return r;
    }
  }
  return std::nullopt;
}

// What a comparison of a key and a query position vector allows, as a bound
// on the key index j against the query index i.
struct Bound {
  bool upper = true;  // upper: j <= i + c; lower: j > i + c
  SymExpr c;
  SymExpr keys, queries;  // the ramps' lengths
};

std::optional<Bound> BoundOf(ShapeEnv& env, const Value* v) {
  const Node* p = v->producer();
  if (p == nullptr || p->num_inputs() != 2) return std::nullopt;
  std::string op = p->op_type();
  if (op != "LessOrEqual" && op != "Less" && op != "GreaterOrEqual" && op != "Greater") return std::nullopt;
  std::optional<Ramp> a = RampOf(env, p->input(0), 0);
  std::optional<Ramp> b = RampOf(env, p->input(1), 0);
  if (!a || !b) return std::nullopt;
  if (a->axis == 2 && b->axis == 1) {  // Q op K: mirror into K op' Q
    std::swap(a, b);
    op = op == "LessOrEqual" ? "GreaterOrEqual" : op == "GreaterOrEqual" ? "LessOrEqual" : op == "Less" ? "Greater" : "Less";
  }
  if (a->axis != 1 || b->axis != 2) return std::nullopt;
  // K = a.offset + j against Q = b.offset + i: K <= Q  ⇔  j <= i + c.
  const SymExpr c = b->offset - a->offset;
  Bound bound{op == "LessOrEqual" || op == "Less", c, a->length, b->length};
  if (op == "Less" || op == "GreaterOrEqual") bound.c = c - 1;
  return bound;
}

// A bool table [1, ..., 1, R, C] that is constant along every diagonal
// (table[r][c] depends only on c - r) and true exactly on the diagonals
// lo..hi: c - r <= hi, and c - r >= lo unless lo is the table's last
// diagonal -(R - 1) (then the bound says nothing inside the table).
struct Band {
  int64_t lo = 0, hi = 0;
  bool bounded_below = false;
};

std::optional<Band> BandOf(const Tensor& table) {
  const std::vector<int64_t>& shape = table.shape();
  if (table.dtype() != DType::kBool || shape.size() < 2) return std::nullopt;
  for (size_t d = 0; d + 2 < shape.size(); ++d) {
    if (shape[d] != 1) return std::nullopt;
  }
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (rows <= 0 || cols <= 0) return std::nullopt;
  // diagonal[c - r + rows - 1]: -1 unseen, else its value.
  std::vector<int8_t> diagonal(static_cast<size_t>(rows + cols - 1), -1);
  const uint8_t* data = table.data<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int8_t v = data[r * cols + c] != 0 ? 1 : 0;
      int8_t& seen = diagonal[static_cast<size_t>(c - r + rows - 1)];
      if (seen >= 0 && seen != v) return std::nullopt;  // not constant along a diagonal
      seen = v;
    }
  }
  std::optional<int64_t> lo, hi;
  for (int64_t k = 0; k < rows + cols - 1; ++k) {
    if (diagonal[static_cast<size_t>(k)] == 0) continue;
    if (hi && *hi != k - 1) return std::nullopt;  // the true diagonals are not one run
    if (!lo) lo = k;
    hi = k;
  }
  if (!lo) return std::nullopt;  // nothing allowed
  return Band{*lo - (rows - 1), *hi - (rows - 1), *lo != 0};
}

// A window of a constant bool table seen through Slices of step 1: element
// (..., i, j) of the value is table[row0 + i][col0 + j], for i < rows and
// j < cols (the value's last two dims).
struct TableRead {
  const Tensor* table = nullptr;
  SymExpr row0 = 0, col0 = 0;
};

std::optional<TableRead> TableReadOf(const Graph& graph, ShapeEnv& env, const Value* v, int depth) {
  if (v == nullptr || depth > kMaxDepth || v->type().dtype != DType::kBool || v->type().rank() < 2) {
    return std::nullopt;
  }
  if (v->is_constant()) return TableRead{v->constant(), 0, 0};
  const Node* p = v->producer();
  if (p == nullptr || p->op_type() != "Slice" || graph.opset() < 10) return std::nullopt;
  std::optional<TableRead> read = TableReadOf(graph, env, p->input(0), depth + 1);
  if (!read) return std::nullopt;
  auto elements = [&](int i) -> std::optional<std::vector<SymExpr>> {
    const Value* in = i < p->num_inputs() ? p->input(i) : nullptr;
    if (in == nullptr || !in->elements()) return std::nullopt;
    return *in->elements();
  };
  const std::vector<SymExpr>& shape = p->input(0)->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::optional<std::vector<SymExpr>> starts = elements(1);
  if (!starts) return std::nullopt;
  std::vector<int64_t> axes;
  if (p->num_inputs() > 3 && p->input(3) != nullptr) {
    std::optional<std::vector<SymExpr>> a = elements(3);
    if (!a || a->size() != starts->size()) return std::nullopt;
    for (SymExpr e : *a) {
      std::optional<int64_t> axis = e.AsConst();
      if (!axis || *axis < -rank || *axis >= rank) return std::nullopt;
      axes.push_back(*axis < 0 ? *axis + rank : *axis);
    }
  } else {
    for (size_t k = 0; k < starts->size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  std::optional<std::vector<SymExpr>> steps;
  if (p->num_inputs() > 4 && p->input(4) != nullptr) {
    steps = elements(4);
    if (!steps || steps->size() != starts->size()) return std::nullopt;
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    if (steps && (*steps)[k].AsConst() != 1) return std::nullopt;
    if (axes[k] < rank - 2) continue;  // a leading axis of 1: the value's dim 1 is checked by the caller
    // The rows (cols) read start at the normalized start: exactly when it
    // lies within the axis, which the ShapeEnv must prove.
    SymExpr start = (*starts)[k];
    const SymExpr dim = shape[axes[k]];
    Provenance why{kPass, p->name(), "a slice of the mask table starts within its axis"};
    if (IsTrue(env.Query(Predicate::Lt(start, 0), why))) start = start + dim;
    if (!IsTrue(env.Query(Predicate::Ge(start, 0), why)) || !IsTrue(env.Query(Predicate::Le(start, dim), why))) {
      return std::nullopt;
    }
    SymExpr& first = axes[k] == rank - 2 ? read->row0 : read->col0;
    first = first + start;
  }
  return read;
}

// The causal bounds a slice of a constant band table states: with the
// table true exactly on diagonals lo..hi, table[row0 + i][col0 + j] is
// j <= i + (row0 - col0 + hi) and, when bounded below,
// j > i + (row0 - col0 + lo - 1). What the table says outside the rows and
// columns the slice reads does not matter, so the whole table is checked.
bool TableBounds(const Graph& graph, ShapeEnv& env, const Value* v, std::optional<Bound>& upper,
                 std::optional<Bound>& lower) {
  const std::vector<SymExpr>& shape = v->type().shape;
  if (shape.size() < 2) return false;
  for (size_t d = 0; d + 2 < shape.size(); ++d) {
    if (shape[d].AsConst() != 1) return false;
  }
  std::optional<TableRead> read = TableReadOf(graph, env, v, 0);
  if (!read) return false;
  std::optional<Band> band = BandOf(*read->table);
  if (!band) return false;
  const SymExpr shift = read->row0 - read->col0;
  const SymExpr keys = shape.back(), queries = shape[shape.size() - 2];
  upper = Bound{true, shift + band->hi, keys, queries};
  if (band->bounded_below) lower = Bound{false, shift + (band->lo - 1), keys, queries};
  return true;
}

// The operands of a tree of And (through Expand, which only broadcasts).
void AndLeaves(Value* v, int depth, std::vector<Value*>& leaves) {
  Node* p = v->producer();
  if (p != nullptr && depth < kMaxDepth && (p->op_type() == "And" || p->op_type() == "Expand")) {
    AndLeaves(p->input(0), depth + 1, leaves);
    if (p->op_type() == "And") AndLeaves(p->input(1), depth + 1, leaves);
    return;
  }
  leaves.push_back(v);
}

struct CausalMatch {
  Value* x = nullptr;       // the scores
  Node* where = nullptr;    // Where(allowed, zero, fill); select: the scores' Where
  const Value* allowed = nullptr;  // select: the condition (shared by the layers that read one mask)
  std::vector<Value*> padding;  // the And operands that are not index bounds
  float fill = 0;
  int64_t window = 0;
  // x was Where(keep, scores, keep_fill) with keep a causal (window)
  // predicate: x is now the scores (CausalSoftmax's keep stage).
  bool keep = false;
  int64_t keep_window = 0;
  float keep_fill = 0;
  bool select = false;       // masked_fill's form: (allowed ? x : fill), M a bool
  std::vector<Node*> nodes;  // Add (select: the scores' Where), Softmax
};

bool IsLastAxisSoftmax(const Graph& graph, const Node& node) {
  const int64_t rank = node.input(0)->type().rank();
  int64_t axis = node.attrs().GetInt("axis", graph.opset() < 13 ? 1 : -1).value_or(0);
  if (axis < 0) axis += rank;
  return rank >= 2 && axis == rank - 1;
}

// Splits Where's condition into the causal bound, an optional window bound
// and the rest; false unless the bounds are exactly a causal (window) mask
// of scores x.
bool MatchCondition(const Graph& graph, ShapeEnv& env, const Node& add, Value* cond, CausalMatch& m) {
  const std::vector<SymExpr>& shape = m.x->type().shape;
  const SymExpr queries = shape[shape.size() - 2];
  const SymExpr keys = shape.back();
  std::vector<Value*> leaves;
  AndLeaves(cond, 0, leaves);
  std::optional<Bound> upper, lower;
  for (Value* leaf : leaves) {
    if (ConstantScalar(leaf) == 1.0) continue;  // the exporters' `new_ones` start
    if (!upper && !lower) {  // GPT-Neo's bias[:, :, T-S:T, :T]: both bounds at once
      std::optional<Bound> table_upper, table_lower;
      if (TableBounds(graph, env, leaf, table_upper, table_lower)) {
        upper = table_upper;
        lower = table_lower;
        continue;
      }
    }
    std::optional<Bound> b = BoundOf(env, leaf);
    std::optional<Bound>& slot = !b ? upper : b->upper ? upper : lower;
    if (!b || slot) {
      m.padding.push_back(leaf);  // a second bound of a kind stays a tensor too
      continue;
    }
    slot = b;
  }
  if (!upper) return false;
  auto why = [&](const char* reason) { return Provenance{kPass, add.name(), reason}; };
  for (const Bound* b : {&*upper, lower ? &*lower : nullptr}) {
    if (b == nullptr) continue;
    if (!DimsEqual(env, b->keys, keys, why("the key positions span the scores' last axis")) ||
        !DimsEqual(env, b->queries, queries, why("the query positions span the scores' rows"))) {
      return false;
    }
  }
  if (!DimsEqual(env, upper->c, keys - queries, why("the causal bound is the past length (keys - queries)"))) {
    return false;
  }
  if (lower) {
    std::optional<int64_t> window = (upper->c - lower->c).AsConst();
    if (!window || *window <= 0) return false;
    m.window = *window;
  }
  return true;
}

std::optional<CausalMatch> MatchAt(const Graph& graph, ShapeEnv& env, Node* softmax) {
  if (softmax->op_type() != "Softmax" || !IsLastAxisSoftmax(graph, *softmax)) return std::nullopt;
  Node* add = ProducerIs(softmax->input(0), "Add");
  if (add == nullptr || SingleUser(add->output(0)) != softmax || IsGraphOutput(graph, add->output(0))) {
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    CausalMatch m;
    m.x = add->input(i);
    m.where = ProducerIs(add->input(1 - i), "Where");
    if (m.where == nullptr || m.x->type().dtype != DType::kF32 || m.x->type().rank() < 2) continue;
    const Value* zero = m.where->input(1);
    std::optional<double> fill = ConstantScalar(m.where->input(2));
    if (ConstantScalar(zero) != 0.0 || zero->type().dtype != DType::kF32 || !fill ||
        m.where->input(2)->type().dtype != DType::kF32 || m.where->input(0)->type().dtype != DType::kBool) {
      continue;
    }
    m.fill = static_cast<float>(*fill);
    if (!ShapesEqual(env, m.x->type().shape, add->output(0)->type().shape,
                     Provenance{kPass, add->name(), "the scores keep their shape"}) ||
        !MatchCondition(graph, env, *add, m.where->input(0), m)) {
      continue;
    }
    m.nodes = {add, softmax};
    return m;
  }
  return std::nullopt;
}

// `not c` as exporters spell masked_fill's inverted mask: Cast-to-bool of
// Where(c, 0, f) with f != 0 (transformers' `where(mask, 0, min).bool()`),
// through further casts to bool, or Not(c); c, else nullptr.
Value* Negated(Value* v) {
  for (int depth = 0; depth < kMaxDepth && v != nullptr && v->type().dtype == DType::kBool; ++depth) {
    Node* p = v->producer();
    if (p == nullptr) return nullptr;
    if (p->op_type() == "Not") return p->input(0);
    if (p->op_type() != "Cast") return nullptr;
    Value* in = p->input(0);
    if (in->type().dtype == DType::kBool) {  // a cast to bool of a bool
      v = in;
      continue;
    }
    Node* where = in->producer();
    if (where == nullptr || where->op_type() != "Where") return nullptr;
    std::optional<double> zero = ConstantScalar(where->input(1)), fill = ConstantScalar(where->input(2));
    if (zero != 0.0 || !fill || *fill == 0.0 || std::isnan(*fill)) return nullptr;
    return where->input(0);
  }
  return nullptr;
}

// masked_fill's form: Softmax(Where(allowed, x, fill)) or, MPT's,
// Softmax(Where(not allowed, fill, x)). The Where's condition is split as
// in the additive form; its other operands become CausalSoftmax's bool M.
std::optional<CausalMatch> MatchSelectAt(const Graph& graph, ShapeEnv& env, Node* softmax) {
  if (softmax->op_type() != "Softmax" || !IsLastAxisSoftmax(graph, *softmax)) return std::nullopt;
  Node* where = ProducerIs(softmax->input(0), "Where");
  if (where == nullptr || SingleUser(where->output(0)) != softmax || IsGraphOutput(graph, where->output(0)) ||
      where->input(0)->type().dtype != DType::kBool) {
    return std::nullopt;
  }
  for (bool negated : {false, true}) {
    CausalMatch m;
    m.select = true;
    m.x = where->input(negated ? 2 : 1);
    const Value* fill_value = where->input(negated ? 1 : 2);
    std::optional<double> fill = ConstantScalar(fill_value);
    if (!fill || fill_value->type().dtype != DType::kF32 || m.x->type().dtype != DType::kF32 ||
        m.x->type().rank() < 2) {
      continue;
    }
    Value* allowed = negated ? Negated(where->input(0)) : where->input(0);
    if (allowed == nullptr) continue;
    m.where = where;
    m.allowed = allowed;
    m.fill = static_cast<float>(*fill);
    if (!ShapesEqual(env, m.x->type().shape, where->output(0)->type().shape,
                     Provenance{kPass, where->name(), "the scores keep their shape"}) ||
        !MatchCondition(graph, env, *where, allowed, m)) {
      continue;
    }
    m.nodes = {where, softmax};
    return m;
  }
  return std::nullopt;
}

// GPT-Neo's scores: m.x = Where(keep, scores, keep_fill), read only by the
// matched node, keep a causal (window) predicate with nothing else in it
// (its table slice or position comparisons): the Where becomes
// CausalSoftmax's keep stage, so its [batch, heads, S, T] output and the
// [S, T] slice it reads go. Exact: the stage selects the same value.
void FoldKeepStage(const Graph& graph, ShapeEnv& env, CausalMatch& m) {
  Node* where = ProducerIs(m.x, "Where");
  if (where == nullptr || SingleUser(m.x) != m.nodes.front() || IsGraphOutput(graph, m.x)) return;
  Value* scores = where->input(1);
  std::optional<double> fill = ConstantScalar(where->input(2));
  if (!fill || where->input(2)->type().dtype != DType::kF32 || scores->type().dtype != DType::kF32 ||
      where->input(0)->type().dtype != DType::kBool ||
      !ShapesEqual(env, scores->type().shape, m.x->type().shape,
                   Provenance{kPass, where->name(), "the kept scores have the scores' shape"})) {
    return;
  }
  CausalMatch keep;
  keep.x = scores;
  if (!MatchCondition(graph, env, *where, where->input(0), keep) || !keep.padding.empty()) return;
  m.keep = true;
  m.keep_window = keep.window;
  m.keep_fill = static_cast<float>(*fill);
  m.x = scores;
  m.nodes.insert(m.nodes.begin(), where);
}

// Where(padding..., zero, fill): the mask without its causal part, built
// once per mask (every layer reads the same one); select: And(padding...),
// or the constant true.
absl::StatusOr<Value*> PaddingMask(Graph& graph, ShapeEnv& env, const CausalMatch& m) {
  if (m.select && m.padding.empty()) {
    return graph.AddConstant("", Tensor::FromVector<uint8_t>(DType::kBool, {}, std::vector<uint8_t>{1}));
  }
  Value* zero = m.select ? nullptr : m.where->input(1);
  if (m.padding.empty()) return zero;
  auto add_node = [&](const std::string& op, std::vector<Value*> inputs) -> absl::StatusOr<Value*> {
    Node* n = graph.AddNode(op, std::move(inputs), 1, Attributes());
    if (absl::Status s = InferNode(*n, env, graph.opset()); !s.ok()) {
      return absl::InternalError(absl::StrCat(kPass, ": the padding mask of '", m.where->name(), "': ", s.message()));
    }
    return n->output(0);
  };
  Value* cond = m.padding[0];
  for (size_t k = 1; k < m.padding.size(); ++k) {
    absl::StatusOr<Value*> both = add_node("And", {cond, m.padding[k]});
    if (!both.ok()) return both.status();
    cond = *both;
  }
  if (m.select) return cond;
  return add_node("Where", {cond, zero, m.where->input(2)});
}

}  // namespace

absl::StatusOr<bool> RecognizeCausalMask(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;              // by earlier rewrites in this sweep
  // The padding mask of each mask the layers share: keyed by the additive
  // form's Where(allowed, 0, fill), or select's `allowed` (neither is removed
  // by a rewrite, so no key can be a freed node's address reused).
  absl::flat_hash_map<const void*, Value*> padding_of;
  for (Node* node : graph.nodes()) {
    if (removed.contains(node)) continue;
    std::optional<CausalMatch> m = MatchAt(graph, env, node);
    if (!m) m = MatchSelectAt(graph, env, node);
    if (!m) continue;
    FoldKeepStage(graph, env, *m);
    Value*& padding = padding_of[m->select ? static_cast<const void*>(m->allowed) : m->where];
    if (padding == nullptr) {
      absl::StatusOr<Value*> built = PaddingMask(graph, env, *m);
      if (!built.ok()) return built.status();
      padding = *built;
    }
    Attributes attrs;
    attrs.Set("fill", m->fill);
    if (m->window > 0) attrs.Set("window", m->window);
    if (m->keep) {
      attrs.Set("keep_fill", m->keep_fill);
      if (m->keep_window > 0) attrs.Set("keep_window", m->keep_window);
    }
    absl::StatusOr<Node*> fused = ReplaceWithNewNode(graph, env, node->output(0), m->nodes, "CausalSoftmax",
                                                     {m->x, padding}, attrs, kPass);
    if (!fused.ok()) return fused.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
