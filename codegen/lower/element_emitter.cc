#include "codegen/lower/element_emitter.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/lower/activation_math.h"
#include "codegen/lower/special_math.h"
#include "graph/dtype.h"
#include "passes/op_classes.h"

namespace shapeshift::codegen::lower {
namespace {

absl::Status Unsupported(const Node* node, absl::string_view why) {
  return absl::UnimplementedError(
      absl::StrCat("cannot lower node '", node->name(), "' (", node->op_type(), "): ", why));
}

codegen::Value BoolConst(bool b) {
  auto node = std::make_shared<ValueNode>();
  node->kind = ValueKind::kConst;
  node->type = ScalarType::kBool;
  node->i_value = b ? 1 : 0;
  return node;
}

codegen::Value TypedConst(ScalarType type, double v) {
  if (type == ScalarType::kF32) return F32(v);
  if (type == ScalarType::kBool) return BoolConst(v != 0);
  if (type == ScalarType::kI64) return I64(static_cast<int64_t>(v));
  return Cast(type, I64(static_cast<int64_t>(v)));
}

// The element of a one-element constant, inlined into the kernel.
std::optional<codegen::Value> InlineScalar(const GraphValue* v) {
  const Tensor* t = v->constant();
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DType::kF32: return F32(t->GetAsDouble(0));
    case DType::kI64: return I64(t->GetAsInt64(0));
    case DType::kI32: return Cast(ScalarType::kI32, I64(t->GetAsInt64(0)));
    case DType::kBool: return BoolConst(t->GetAsInt64(0) != 0);
    default: return std::nullopt;
  }
}

std::optional<double> ScalarConstant(const GraphValue* v) {
  const Tensor* t = v == nullptr ? nullptr : v->constant();
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  return t->GetAsDouble(0);
}

}  // namespace

absl::StatusOr<ScalarType> KernelType(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kF32: return ScalarType::kF32;
    case DType::kI64: return ScalarType::kI64;
    case DType::kI32: return ScalarType::kI32;
    case DType::kBool: return ScalarType::kBool;
    default:
      return absl::UnimplementedError(
          absl::StrCat(what, ": element type ", DTypeName(dtype), " is not supported by compiled kernels"));
  }
}

ElementEmitter::ElementEmitter(Kernel* kernel, ShapeEnv* env, const std::vector<Node*>& group_nodes)
    : kernel_(kernel), env_(env), dims_(kernel) {
  for (const Node* n : group_nodes) in_group_.insert(n);
}

SymExpr ElementEmitter::Linear(const std::vector<SymExpr>& model_shape, const std::vector<SymExpr>& idx) {
  if (!domain_shape_.empty() && model_shape == domain_shape_ && idx == domain_idx_) return domain_linear_;
  SymExpr linear = 0;
  SymExpr stride = 1;
  for (int k = static_cast<int>(model_shape.size()) - 1; k >= 0; --k) {
    linear = linear + idx[k] * stride;
    stride = stride * dims_.Bind(model_shape[k]);
  }
  return linear;
}

absl::StatusOr<std::vector<SymExpr>> ElementEmitter::BroadcastIndex(const GraphValue* v,
                                                                    const std::vector<SymExpr>& target,
                                                                    const std::vector<SymExpr>& idx,
                                                                    const Node* at) {
  const std::vector<SymExpr>& shape = v->type().shape;
  size_t offset = target.size() - shape.size();
  if (shape.size() > target.size()) {
    return Unsupported(at, absl::StrCat("input '", v->name(), "' has a higher rank than the result"));
  }
  std::vector<SymExpr> out(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) {
    SymExpr dim = shape[k];
    SymExpr want = target[k + offset];
    if (dim == want || env_->CanProveEqual(dim, want)) {
      out[k] = idx[k + offset];
    } else if (dim == SymExpr(1) || env_->CanProveEqual(dim, 1)) {
      out[k] = 0;
    } else {
      return Unsupported(at, absl::StrCat("cannot prove that dim ", k, " of '", v->name(), "' (", dim.ToString(),
                                          ") equals ", want.ToString(), " or 1 for every input"));
    }
  }
  return out;
}

absl::StatusOr<BufferRef> ElementEmitter::InputBuffer(const GraphValue* v) {
  if (auto it = buffer_of_.find(v); it != buffer_of_.end()) {
    return BufferRef{it->second, kernel_->buffers[it->second].dtype};
  }
  absl::StatusOr<ScalarType> type = KernelType(v->type().dtype, "value '" + v->name() + "'");
  if (!type.ok()) return type.status();
  BufferRef ref = kernel_->AddInput(absl::StrCat("in", buffer_values_.size()), *type);
  buffer_of_[v] = ref.index;
  buffer_values_.push_back(v);
  return ref;
}

absl::StatusOr<BufferRef> ElementEmitter::OutputBuffer(const GraphValue* v) {
  absl::StatusOr<ScalarType> type = KernelType(v->type().dtype, "value '" + v->name() + "'");
  if (!type.ok()) return type.status();
  BufferRef ref = kernel_->AddOutput(absl::StrCat("out", buffer_values_.size()), *type);
  buffer_values_.push_back(v);
  return ref;
}

absl::StatusOr<codegen::Value> ElementEmitter::EmitBroadcast(const GraphValue* v, const std::vector<SymExpr>& target,
                                                             const std::vector<SymExpr>& idx, const Node* at) {
  absl::StatusOr<std::vector<SymExpr>> vidx = BroadcastIndex(v, target, idx, at);
  if (!vidx.ok()) return vidx.status();
  return Emit(v, *vidx);
}

absl::StatusOr<codegen::Value> ElementEmitter::Emit(const GraphValue* v, const std::vector<SymExpr>& idx) {
  if (auto it = overrides_.find(v); it != overrides_.end()) return it->second;
  auto key = std::make_pair(v->id(), idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  absl::StatusOr<codegen::Value> result;
  Node* producer = v->producer();
  if (producer != nullptr && in_group_.contains(producer)) {
    result = EmitNode(producer, v, idx);
  } else if (std::optional<codegen::Value> scalar = InlineScalar(v)) {
    result = *scalar;
  } else {
    absl::StatusOr<BufferRef> buffer = InputBuffer(v);
    if (!buffer.ok()) return buffer.status();
    result = Load(*buffer, Linear(v->type().shape, idx));
  }
  if (result.ok()) memo_[key] = *result;
  return result;
}

absl::StatusOr<codegen::Value> ElementEmitter::EmitInput(const Node* node, int i, const std::vector<SymExpr>& idx) {
  const GraphValue* in = node->input(i);
  if (in == nullptr) return Unsupported(node, absl::StrCat("input ", i, " is absent"));
  return EmitBroadcast(in, node->output(0)->type().shape, idx, node);
}

absl::StatusOr<std::vector<SymExpr>> ElementEmitter::ReshapeIndex(const GraphValue* in, const GraphValue* out,
                                                                  const std::vector<SymExpr>& idx) {
  // Squeeze/Unsqueeze-like: the non-1 dims agree in order, so the index maps
  // dim to dim without division.
  std::vector<int> in_non1, out_non1;
  for (int k = 0; k < in->type().rank(); ++k) {
    if (in->type().shape[k] != SymExpr(1)) in_non1.push_back(k);
  }
  for (int k = 0; k < out->type().rank(); ++k) {
    if (out->type().shape[k] != SymExpr(1)) out_non1.push_back(k);
  }
  bool same_dims = in_non1.size() == out_non1.size();
  for (size_t i = 0; same_dims && i < in_non1.size(); ++i) {
    same_dims = in->type().shape[in_non1[i]] == out->type().shape[out_non1[i]];
  }
  std::vector<SymExpr> in_idx(in->type().rank(), SymExpr(0));
  if (same_dims) {
    for (size_t i = 0; i < in_non1.size(); ++i) in_idx[in_non1[i]] = idx[out_non1[i]];
    return in_idx;
  }
  // Trailing dims both shapes share map index to index (BLOOM's [b·h, S, T]
  // → [b, h, S, T] keeps S and T): only the leading dims are re-split, so
  // the innermost index stays the loop's own (a contiguous read).
  const std::vector<SymExpr>& in_shape = in->type().shape;
  const std::vector<SymExpr>& out_shape = out->type().shape;
  size_t common = 0;
  while (common + 1 < in_shape.size() && common + 1 < out_shape.size() &&
         in_shape[in_shape.size() - 1 - common] == out_shape[out_shape.size() - 1 - common]) {
    ++common;
  }
  const int in_lead = static_cast<int>(in_shape.size() - common);
  const int out_lead = static_cast<int>(out_shape.size() - common);
  for (size_t k = 0; k < common; ++k) in_idx[in_lead + k] = idx[out_lead + k];
  // General row-major reshape of the rest: linearize, then split by the
  // input's dims.
  SymExpr linear = common == 0 ? Linear(out_shape, idx)
                               : Linear({out_shape.begin(), out_shape.begin() + out_lead},
                                        {idx.begin(), idx.begin() + out_lead});
  SymExpr stride = 1;
  for (int k = in_lead - 1; k >= 0; --k) {
    SymExpr dim = dims_.Bind(in_shape[k]);
    in_idx[k] = k == 0 ? FloorDiv(linear, stride) : Mod(FloorDiv(linear, stride), dim);
    stride = stride * dim;
  }
  return in_idx;
}

absl::StatusOr<codegen::Value> ElementEmitter::EmitNode(const Node* node, const GraphValue* v,
                                                        const std::vector<SymExpr>& idx) {
  const std::string& op = node->op_type();
  absl::StatusOr<ScalarType> out_type = KernelType(v->type().dtype, "node '" + node->name() + "'");
  if (!out_type.ok()) return out_type.status();
  auto arg = [&](int i) { return EmitInput(node, i, idx); };
#define SS_ARG(name, i)                                     \
  absl::StatusOr<codegen::Value> name##_or = arg(i);        \
  if (!name##_or.ok()) return name##_or.status();           \
  codegen::Value name = *name##_or

  static const std::map<std::string, BinaryOp>* kBinary = new std::map<std::string, BinaryOp>{
      {"Add", BinaryOp::kAdd}, {"Sum", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul},
      {"Div", BinaryOp::kDiv}, {"Max", BinaryOp::kMax}, {"Min", BinaryOp::kMin}};
  static const std::map<std::string, UnaryOp>* kUnary = new std::map<std::string, UnaryOp>{
      {"Neg", UnaryOp::kNeg},   {"Abs", UnaryOp::kAbs},   {"Exp", UnaryOp::kExp},
      {"Log", UnaryOp::kLog},   {"Sqrt", UnaryOp::kSqrt}, {"Tanh", UnaryOp::kTanh},
      {"Erf", UnaryOp::kErf},   {"Sigmoid", UnaryOp::kSigmoid}, {"Reciprocal", UnaryOp::kRecip},
      {"Sin", UnaryOp::kSin},   {"Cos", UnaryOp::kCos},   {"Floor", UnaryOp::kFloor},
      {"Ceil", UnaryOp::kCeil}, {"Round", UnaryOp::kRound}};
  static const std::map<std::string, CompareOp>* kCompare = new std::map<std::string, CompareOp>{
      {"Equal", CompareOp::kEq},          {"Less", CompareOp::kLt},  {"LessOrEqual", CompareOp::kLe},
      {"Greater", CompareOp::kGt}, {"GreaterOrEqual", CompareOp::kGe}};

  if (auto it = kBinary->find(op); it != kBinary->end()) {
    // The variadic Sum/Max/Min of one input is that input (the table's arity
    // keeps the binary ops at two).
    if (node->num_inputs() < 1) return Unsupported(node, "expects an input");
    SS_ARG(acc, 0);
    for (int i = 1; i < node->num_inputs(); ++i) {
      SS_ARG(rhs, i);
      acc = Binary(it->second, acc, rhs);
    }
    return acc;
  }
  if (auto it = kUnary->find(op); it != kUnary->end()) {
    SS_ARG(x, 0);
    if (x->type != ScalarType::kF32 && it->second != UnaryOp::kNeg && it->second != UnaryOp::kAbs) {
      return Unsupported(node, "compiled for f32 only");
    }
    return Unary(it->second, x);
  }
  if (op == "Mean") {
    if (*out_type != ScalarType::kF32) return Unsupported(node, "Mean is compiled for f32 only");
    SS_ARG(acc, 0);
    for (int i = 1; i < node->num_inputs(); ++i) {
      SS_ARG(rhs, i);
      acc = acc + rhs;
    }
    return acc / F32(node->num_inputs());  // the reference's division, not a product by 1/n
  }
  if (op == "Mod") {
    absl::StatusOr<int64_t> fmod = node->attrs().GetInt("fmod", 0);
    if (!fmod.ok()) return fmod.status();
    if (*fmod == 0 && *out_type == ScalarType::kF32) return Unsupported(node, "Mod of floats needs fmod=1");
    SS_ARG(a, 0);
    SS_ARG(b, 1);
    return lower::Mod(a, b, /*c_fmod=*/*fmod != 0);  // special_math.h
  }
  if (op == "Sign") {
    SS_ARG(x, 0);
    return lower::Sign(x);
  }
  if (op == "IsInf") {
    SS_ARG(x, 0);
    absl::StatusOr<int64_t> negative = node->attrs().GetInt("detect_negative", 1);
    absl::StatusOr<int64_t> positive = node->attrs().GetInt("detect_positive", 1);
    if (!negative.ok()) return negative.status();
    if (!positive.ok()) return positive.status();
    if (x->type != ScalarType::kF32) return BoolConst(false);
    codegen::Value result = BoolConst(false);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    if (*positive) result = Compare(CompareOp::kEq, x, F32(kInf));
    if (*negative) result = Select(Compare(CompareOp::kEq, x, F32(-kInf)), BoolConst(true), result);
    return result;
  }
  if (auto it = kCompare->find(op); it != kCompare->end()) {
    SS_ARG(a, 0);
    SS_ARG(b, 1);
    return Compare(it->second, a, b);
  }
  if (op == "Relu") {
    SS_ARG(x, 0);
    return Max(x, TypedConst(*out_type, 0));
  }
  if (op == "Pow") {
    SS_ARG(x, 0);
    std::optional<double> e = ScalarConstant(node->input(1));
    if (e && (*e == 1 || *e == 2 || *e == 3)) return PowByConstant(x, *e);  // exact products, any type
    if (*out_type != ScalarType::kF32) return Unsupported(node, "integer Pow is compiled for exponents 1, 2 and 3 only");
    if (e) return PowByConstant(x, *e);
    SS_ARG(y, 1);
    if (y->type != ScalarType::kF32) y = Cast(ScalarType::kF32, y);
    return lower::Pow(x, y);  // special_math.h: pow's special values
  }
  if (op == "Gelu") {
    if (*out_type != ScalarType::kF32) return Unsupported(node, "Gelu is compiled for f32 only");
    absl::StatusOr<std::string> approximate = node->attrs().GetString("approximate", "none");
    if (!approximate.ok()) return approximate.status();
    SS_ARG(x, 0);
    codegen::Value gate;
    if (*approximate == "none") {
      gate = F32(1) + Unary(UnaryOp::kErf, x * F32(M_SQRT1_2));
    } else if (*approximate == "tanh") {
      gate = F32(1) + Unary(UnaryOp::kTanh, F32(std::sqrt(2.0 / M_PI)) * (x + F32(0.044715) * x * x * x));
    } else {
      return Unsupported(node, "approximate must be \"none\" or \"tanh\"");
    }
    return F32(0.5) * x * gate;
  }
  if (op == "Where") {
    SS_ARG(c, 0);
    SS_ARG(a, 1);
    SS_ARG(b, 2);
    return Select(c, a, b);
  }
  if (op == "IsNaN") {
    // NaN is the only value unequal to itself (an unordered compare).
    SS_ARG(x, 0);
    if (x->type != ScalarType::kF32) return BoolConst(false);
    return Compare(CompareOp::kNe, x, x);
  }
  if (op == "Not") {
    SS_ARG(x, 0);
    return Select(x, BoolConst(false), BoolConst(true));
  }
  if (op == "And" || op == "Or" || op == "Xor") {
    SS_ARG(a, 0);
    SS_ARG(b, 1);
    if (op == "Xor") return Compare(CompareOp::kNe, a, b);
    return op == "And" ? Select(a, b, BoolConst(false)) : Select(a, BoolConst(true), b);
  }
  if (op == "Cast") {
    SS_ARG(x, 0);
    if (x->type == *out_type) return x;
    if (*out_type == ScalarType::kBool) return Compare(CompareOp::kNe, x, TypedConst(x->type, 0));
    if (x->type == ScalarType::kBool) return Select(x, TypedConst(*out_type, 1), TypedConst(*out_type, 0));
    return Cast(*out_type, x);
  }
  if (op == "Clip") {
    SS_ARG(x, 0);
    std::optional<codegen::Value> bounds[2];
    for (int i : {0, 1}) {
      const char* attr = i == 0 ? "min" : "max";  // before opset 11
      if (node->input(1 + i) != nullptr) {
        SS_ARG(bound, 1 + i);
        bounds[i] = bound;
      } else if (node->attrs().Has(attr)) {
        absl::StatusOr<float> v = node->attrs().GetFloat(attr, 0.f);
        if (!v.ok()) return v.status();
        bounds[i] = TypedConst(*out_type, *v);
      }
    }
    return lower::Clip(x, bounds[0], bounds[1]);  // special_math.h: ORT's NaN rules
  }
  if (IsActivation(op)) {
    if (*out_type != ScalarType::kF32) return Unsupported(node, "compiled for f32 only");
    SS_ARG(x, 0);
    return Activation(*node, x);  // activation_math.h
  }
  if (op == "LeakyRelu" || op == "PRelu") {
    if (*out_type != ScalarType::kF32) return Unsupported(node, "compiled for f32 only");
    SS_ARG(x, 0);
    if (op == "PRelu") {
      SS_ARG(slope, 1);
      return lower::LeakyRelu(x, slope);
    }
    absl::StatusOr<float> alpha = node->attrs().GetFloat("alpha", 0.01f);
    if (!alpha.ok()) return alpha.status();
    return lower::LeakyRelu(x, F32(*alpha));
  }
  if (op == "Expand" || op == "Identity" || op == "Dropout") {
    return arg(0);
  }
  if (passes::IsViewOp(*node)) {
    absl::StatusOr<std::vector<SymExpr>> in_idx = ReshapeIndex(node->input(0), v, idx);
    if (!in_idx.ok()) return in_idx.status();
    return Emit(node->input(0), *in_idx);
  }
  if (op == "Transpose") {
    int64_t rank = v->type().rank();
    absl::StatusOr<std::vector<int64_t>> perm = node->attrs().GetInts("perm", {});
    if (!perm.ok()) return perm.status();
    std::vector<int64_t> p = *perm;
    if (p.empty()) {
      for (int64_t k = rank - 1; k >= 0; --k) p.push_back(k);
    }
    if (static_cast<int64_t>(p.size()) != rank) return Unsupported(node, "perm does not match the rank");
    std::vector<SymExpr> in_idx(rank);
    for (int64_t k = 0; k < rank; ++k) in_idx[p[k]] = idx[k];
    return Emit(node->input(0), in_idx);
  }
  if (op == "RelativePositionExpand") {
    // out[p, i, j, q] = x[p, j - i + S - 1, q]: a load whose index is a sum
    // of loop indices (contiguous in j), so no [S, T] tensor is read.
    const GraphValue* x = node->input(0);
    absl::StatusOr<int64_t> axis = node->attrs().GetInt("axis", 0);
    if (!axis.ok()) return axis.status();
    const int64_t a = *axis < 0 ? *axis + x->type().rank() : *axis;
    const auto& rows = node->input(1)->elements();
    if (a < 0 || a >= x->type().rank() || !rows || rows->size() != 1 ||
        static_cast<int64_t>(idx.size()) != x->type().rank() + 1) {
      return Unsupported(node, "axis and rows must be known and fit the input");
    }
    std::vector<SymExpr> in_idx(idx.begin(), idx.begin() + a);
    in_idx.push_back(idx[a + 1] - idx[a] + dims_.Bind((*rows)[0]) - 1);
    in_idx.insert(in_idx.end(), idx.begin() + a + 2, idx.end());
    return Emit(x, in_idx);
  }
  if (op == "Range") {
    const auto& start = node->input(0)->elements();
    const auto& delta = node->input(2)->elements();
    if (!start || !delta || start->size() != 1 || delta->size() != 1) {
      return Unsupported(node, "start and delta must be known shape values");
    }
    codegen::Value value = IndexValue(dims_.Bind((*start)[0]) + idx[0] * dims_.Bind((*delta)[0]));
    return *out_type == ScalarType::kI64 ? value : Cast(*out_type, value);
  }
  if (op == "ConstantOfShape") {
    double fill = 0;
    if (node->attrs().Has("value")) {
      absl::StatusOr<Tensor> t = node->attrs().GetTensor("value");
      if (!t.ok()) return t.status();
      if (t->num_elements() != 1) return Unsupported(node, "value must have one element");
      fill = t->GetAsDouble(0);
    }
    return TypedConst(*out_type, fill);
  }
  return Unsupported(node, "op is not supported in a fused elementwise kernel");
#undef SS_ARG
}

}  // namespace shapeshift::codegen::lower
