// Kernel IR -> CUDA C: expressions, statements and the three thread mappings
// (see cuda_emitter.h for the contract).
#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "codegen/cuda/thread_mapping.h"
#include "codegen/kernel_visitor.h"
#include "shapes/sym_expr_visitor.h"

namespace shapeshift::codegen::cuda {
namespace {

// Names from the IR are prefixed so they never collide with C keywords or
// with each other across kinds (dims, loop variables, lets, row state).
std::string Ident(const std::string& prefix, const std::string& name) {
  std::string out = prefix;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

const char* CType(ScalarType t) {
  switch (t) {
    case ScalarType::kF32: return "float";
    case ScalarType::kI64: return "long long";
    case ScalarType::kI32: return "int";
    case ScalarType::kBool: return "bool";
  }
  return "void";
}

const char* MemoryCType(ScalarType t) { return t == ScalarType::kBool ? "unsigned char" : CType(t); }

std::string IntLiteral(int64_t v) {
  // -9223372036854775808LL is not a literal: its magnitude does not fit.
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return absl::StrCat("(", v, "LL)");
}

std::string FloatLiteral(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  return absl::StrFormat("%af", static_cast<double>(f));  // exact hex float
}

// The neutral element a thread's partial accumulator starts from.
// What the emitter writes for an IR operation it has no CUDA spelling for:
// EmitCudaKernel finds the marker and refuses the kernel, naming it (and the
// text could not compile anyway), so a new IR op never becomes a silently
// different computation on the GPU.
constexpr char kUnsupported[] = "SS_UNSUPPORTED";
std::string Unsupported(const char* what, int op) { return absl::StrCat(kUnsupported, "(", what, " #", op, ")"); }

std::string Identity(ReduceOp op, ScalarType t) {
  if (op == ReduceOp::kSum) return t == ScalarType::kF32 ? "0.0f" : absl::StrCat("((", CType(t), ")0)");
  if (op == ReduceOp::kProd) return t == ScalarType::kF32 ? "1.0f" : absl::StrCat("((", CType(t), ")1)");
  if (op != ReduceOp::kMax) return Unsupported("reduce op", static_cast<int>(op));
  switch (t) {
    case ScalarType::kF32: return "__int_as_float(0xff800000)";
    case ScalarType::kI64: return IntLiteral(INT64_MIN);
    case ScalarType::kI32: return "(-2147483647 - 1)";
    case ScalarType::kBool: return "false";
  }
  return "0";
}

std::string Combine(ReduceOp op, ScalarType t, const std::string& a, const std::string& b) {
  if (op == ReduceOp::kSum) return absl::StrCat("(", a, " + ", b, ")");
  if (op == ReduceOp::kProd) return absl::StrCat("(", a, " * ", b, ")");
  if (op != ReduceOp::kMax) return Unsupported("reduce op", static_cast<int>(op));
  return t == ScalarType::kF32 ? absl::StrCat("ss_fmax(", a, ", ", b, ")") : absl::StrCat("ss_max(", a, ", ", b, ")");
}

// ---- The emitter --------------------------------------------------------------

class CudaEmitter : private ValueFold<std::string>, private StmtVisitor<void, int, std::string*> {
 public:
  explicit CudaEmitter(const Kernel& kernel) : kernel_(kernel) {
    for (const std::string& d : kernel.dims) symbol_names_[d] = Ident("d_", d);
  }

  absl::StatusOr<CudaKernelSource> Run(const std::string& entry) {
    MappingPlan plan = ChooseMapping(kernel_);
    CudaKernelSource result;
    result.entry = entry;
    result.mapping = plan.mapping;
    result.work = kernel_.parallel_extent;
    std::string out = absl::StrCat("\nextern \"C\" __global__ void __launch_bounds__(", kMaxBlockThreads, ") ", entry,
                                   "(void* const* buffers, const long long* dims) {\n");
    for (size_t i = 0; i < kernel_.dims.size(); ++i) {
      absl::StrAppend(&out, "  const long long ", symbol_names_[kernel_.dims[i]], " = dims[", i, "];\n");
    }
    for (size_t i = 0; i < kernel_.buffers.size(); ++i) {
      const BufferParam& b = kernel_.buffers[i];
      const char* qual = b.role == BufferRole::kInput ? "const " : "";
      absl::StrAppend(&out, "  ", qual, MemoryCType(b.dtype), "* __restrict__ ", BufferName(i), " = (", qual,
                      MemoryCType(b.dtype), "*)buffers[", i, "];\n");
    }
    std::string p = Ident("i_", kernel_.parallel_var);
    symbol_names_[kernel_.parallel_var] = p;
    absl::StrAppend(&out, "  const long long extent = ", Sym(kernel_.parallel_extent), ";\n");
    switch (plan.mapping) {
      case ThreadMapping::kFlat: EmitFlat(p, &out, &result); break;
      case ThreadMapping::kBlockPerRow: EmitBlockPerRow(plan, p, &out, &result); break;
      case ThreadMapping::kThreadPerIteration:
        absl::StrAppend(&out, "  SS_THREADS {\n");
        absl::StrAppend(&out, "    for (long long ", p, " = (long long)blockIdx.x * blockDim.x + threadIdx.x; ", p,
                        " < extent; ", p, " += (long long)gridDim.x * blockDim.x) {\n");
        EmitBlock(kernel_.body, 3, &out);
        absl::StrAppend(&out, "    }\n  }\n");
        break;
    }
    absl::StrAppend(&out, "}\n");
    if (size_t at = out.find(kUnsupported); at != std::string::npos) {
      // An IR operation this emitter has no CUDA spelling for (one added to
      // kernel_ir.h after this file): refuse the kernel rather than emit code
      // that computes something else.
      size_t end = out.find(')', at);
      return absl::UnimplementedError(absl::StrCat("kernel '", kernel_.name, "': the CUDA emitter has no spelling for ",
                                                   out.substr(at + sizeof(kUnsupported), end - at - sizeof(kUnsupported))));
    }
    result.function = std::move(out);
    return result;
  }

 private:
  // The statements between two barriers of a block-per-row kernel.
  struct Phase {
    explicit Phase(std::string* out) : out(out) {}
    void Open() {
      if (!open) absl::StrAppend(out, "    SS_THREADS {\n");
      open = true;
    }
    void Close() {
      if (open) absl::StrAppend(out, "    } SS_SYNC\n");
      open = false;
    }
    std::string* out;
    bool open = false;
  };

  // One thread per (p, j): the single top-level loop is flattened with p.
  void EmitFlat(const std::string& p, std::string* out, CudaKernelSource* result) {
    const Stmt& loop = kernel_.body[0];
    std::string j = Ident("i_", loop.name);
    absl::StrAppend(out, "  const long long ss_len = ", Sym(TripCount(loop)), ";\n");
    absl::StrAppend(out, "  const long long ss_total = extent * ss_len;\n");
    absl::StrAppend(out, "  SS_THREADS {\n");
    absl::StrAppend(out, "    for (long long ss_t = (long long)blockIdx.x * blockDim.x + threadIdx.x; ss_t < ss_total; ",
                    "ss_t += (long long)gridDim.x * blockDim.x) {\n");
    absl::StrAppend(out, "      const long long ", p, " = ss_t / ss_len;\n");
    symbol_names_[loop.name] = j;
    absl::StrAppend(out, "      const long long ", j, " = ", Sym(loop.begin), " + (ss_t - ", p, " * ss_len);\n");
    EmitBlock(loop.body, 3, out);
    symbol_names_.erase(loop.name);
    absl::StrAppend(out, "    }\n  }\n");
    result->work = kernel_.parallel_extent * TripCount(loop);
  }

  // One block per row; top-level values live across barriers as privates.
  void EmitBlockPerRow(const MappingPlan& plan, const std::string& p, std::string* out, CudaKernelSource* result) {
    result->row_length = kMaxBlockThreads;
    bool row_length_set = false;  // from the first loop that reduces
    for (const Stmt& s : kernel_.body) {
      if (s.kind == StmtKind::kLet || s.kind == StmtKind::kAccumulator) {
        row_state_.insert(s.name);
        absl::StrAppend(out, "  SS_PRIVATE(", CType(s.value->type), ", ", Ident("r_", s.name), ");\n");
      }
      if (s.kind != StmtKind::kLoop) continue;
      const RowLoopPlan& loop = plan.loops.at(&s);
      if (!row_length_set && !loop.reduced.empty()) {
        if (OnlyDims(s.begin, kernel_) && OnlyDims(s.end, kernel_)) result->row_length = TripCount(s);
        row_length_set = true;
      }
      for (const std::string& name : loop.reduced) {
        if (!shared_.insert(name).second) continue;
        ScalarType t = AccumulatorType(name);
        absl::StrAppend(out, "  SS_PRIVATE(", CType(t), ", ", PartialName(name), ");\n");
        absl::StrAppend(out, "  __shared__ ", CType(t), " ", SharedName(name), "[SS_MAX_BLOCK];\n");
      }
    }
    absl::StrAppend(out, "  for (long long ", p, " = blockIdx.x; ", p, " < extent; ", p, " += gridDim.x) {\n");
    Phase phase(out);
    RowStatements row(*this, plan, &phase, out);
    for (const Stmt& s : kernel_.body) row.Visit(s);
    phase.Close();
    absl::StrAppend(out, "  }\n");
  }

  // The top-level statements of a block-per-row kernel: row state is a
  // private every thread holds, a store is thread 0's, a loop is split over
  // the block's threads.
  class RowStatements : public StmtVisitor<void> {
   public:
    RowStatements(CudaEmitter& e, const MappingPlan& plan, Phase* phase, std::string* out)
        : e_(e), plan_(plan), phase_(phase), out_(out) {}

   private:
    void VisitLet(const Stmt& s) override { SetRowState(s); }
    void VisitAccumulator(const Stmt& s) override { SetRowState(s); }
    void VisitAccumulate(const Stmt& s) override {  // uniform: every thread applies it to its copy
      phase_->Open();
      std::string acc = absl::StrCat("SS_P(", Ident("r_", s.name), ")");
      std::string value = e_.Val(s.value, kIn, out_);
      absl::StrAppend(out_, kIn, acc, " = ", Combine(s.reduce, s.value->type, acc, value), ";\n");
    }
    void VisitStore(const Stmt& s) override { StoreOnThreadZero(s); }
    void VisitStoreAt(const Stmt& s) override { StoreOnThreadZero(s); }
    void VisitLoop(const Stmt& s) override { e_.EmitRowLoop(s, plan_.loops.at(&s), phase_, out_); }

    void SetRowState(const Stmt& s) {
      phase_->Open();
      std::string value = e_.Val(s.value, kIn, out_);
      absl::StrAppend(out_, kIn, "SS_P(", Ident("r_", s.name), ") = ", value, ";\n");
    }
    void StoreOnThreadZero(const Stmt& s) {
      phase_->Open();
      absl::StrAppend(out_, kIn, "if (threadIdx.x == 0) {\n");
      e_.EmitBlock({s}, 4, out_);
      absl::StrAppend(out_, kIn, "}\n");
      phase_->Close();
    }

    static constexpr char kIn[] = "      ";
    CudaEmitter& e_;
    const MappingPlan& plan_;
    Phase* phase_;
    std::string* out_;
  };

  // A top-level loop split over the block's threads, then the tree
  // combination of what it reduced.
  void EmitRowLoop(const Stmt& s, const RowLoopPlan& loop, Phase* phase, std::string* out);

  ScalarType AccumulatorType(const std::string& name) const {
    for (const Stmt& s : kernel_.body) {
      if (s.kind == StmtKind::kAccumulator && s.name == name) return s.value->type;
    }
    return ScalarType::kF32;
  }
  static std::string PartialName(const std::string& name) { return Ident("r_", name) + "__part"; }
  static std::string SharedName(const std::string& name) { return Ident("ss_red_", name); }
  std::string BufferName(int i) const { return absl::StrCat("buf", i); }

  std::string VarRef(const std::string& name) const {
    if (row_state_.contains(name)) return absl::StrCat("SS_P(", Ident("r_", name), ")");
    return Ident("v_", name);
  }

  std::string Sym(SymExpr e) const { return IndexText(*this).Visit(e); }

  // An index expression as C (floor semantics through the prelude's helpers).
  class IndexText final : public SymExprVisitor<std::string> {
   public:
    explicit IndexText(const CudaEmitter& e) : e_(e) {}

   private:
    std::string VisitConst(const SymExpr&, int64_t value) override { return IntLiteral(value); }
    std::string VisitSymbol(const SymExpr&, const std::string& name) override {
      auto it = e_.symbol_names_.find(name);
      return it == e_.symbol_names_.end() ? Ident("unbound_", name) : it->second;
    }
    std::string VisitAdd(const SymExpr&, absl::Span<const SymExpr> ops) override { return Chain(ops, " + "); }
    std::string VisitMul(const SymExpr&, absl::Span<const SymExpr> ops) override { return Chain(ops, " * "); }
    std::string VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
      return Call("ss_floordiv(", a, b);
    }
    std::string VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b) override { return Call("ss_mod(", a, b); }
    std::string VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b) override { return Call("ss_min(", a, b); }
    std::string VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b) override { return Call("ss_max(", a, b); }

    std::string Chain(absl::Span<const SymExpr> ops, const char* op) const {
      std::string s = absl::StrCat("(", e_.Sym(ops[0]));
      for (size_t i = 1; i < ops.size(); ++i) absl::StrAppend(&s, op, e_.Sym(ops[i]));
      return s + ")";
    }
    std::string Call(const char* name, const SymExpr& a, const SymExpr& b) const {
      return absl::StrCat(name, e_.Sym(a), ", ", e_.Sym(b), ")");
    }

    const CudaEmitter& e_;
  };

  // ---- Values: the C text of one node from its operands' texts -------------

  using Ops = absl::Span<std::string>;

  std::string VisitConst(const ValueNode& v, Ops) override {
    if (v.type == ScalarType::kF32) return FloatLiteral(v.f_value);
    if (v.type == ScalarType::kBool) return v.i_value ? "true" : "false";
    return absl::StrCat("((", CType(v.type), ")", IntLiteral(v.i_value), ")");
  }
  std::string VisitLoad(const ValueNode& v, Ops) override {
    std::string load = absl::StrCat(BufferName(v.buffer), "[", Sym(v.index), "]");
    return v.type == ScalarType::kBool ? absl::StrCat("(", load, " != 0)") : load;
  }
  std::string VisitLoadAt(const ValueNode& v, Ops ops) override {
    std::string load = absl::StrCat(BufferName(v.buffer), "[", std::move(ops[0]), "]");
    return v.type == ScalarType::kBool ? absl::StrCat("(", load, " != 0)") : load;
  }
  std::string VisitIndex(const ValueNode& v, Ops) override { return Sym(v.index); }
  std::string VisitVar(const ValueNode& v, Ops) override { return VarRef(v.name); }
  std::string VisitUnary(const ValueNode& v, UnaryOp op, Ops ops) override {
    const std::string x = std::move(ops[0]);
    const bool is_float = v.type == ScalarType::kF32;
    switch (op) {
      case UnaryOp::kNeg: return absl::StrCat("(-", x, ")");
      case UnaryOp::kAbs: return is_float ? absl::StrCat("fabsf(", x, ")") : absl::StrCat("llabs(", x, ")");
      case UnaryOp::kExp: return absl::StrCat("expf(", x, ")");
      case UnaryOp::kLog: return absl::StrCat("logf(", x, ")");
      case UnaryOp::kSqrt: return absl::StrCat("sqrtf(", x, ")");
      case UnaryOp::kRsqrt: return absl::StrCat("rsqrtf(", x, ")");
      case UnaryOp::kTanh: return absl::StrCat("tanhf(", x, ")");
      case UnaryOp::kErf: return absl::StrCat("erff(", x, ")");
      case UnaryOp::kSigmoid: return absl::StrCat("(1.0f / (1.0f + expf(-", x, ")))");
      case UnaryOp::kRecip: return absl::StrCat("(1.0f / ", x, ")");
      case UnaryOp::kSin: return absl::StrCat("sinf(", x, ")");
      case UnaryOp::kCos: return absl::StrCat("cosf(", x, ")");
      case UnaryOp::kFloor: return absl::StrCat("floorf(", x, ")");
      case UnaryOp::kCeil: return absl::StrCat("ceilf(", x, ")");
      case UnaryOp::kRound: return absl::StrCat("rintf(", x, ")");  // half to even
    }
    return Unsupported("unary op", v.op);
  }
  std::string VisitBinary(const ValueNode& v, BinaryOp op, Ops ops) override {
    const std::string a = std::move(ops[0]), b = std::move(ops[1]);
    const bool is_float = v.type == ScalarType::kF32;
    switch (op) {
      case BinaryOp::kAdd: return absl::StrCat("(", a, " + ", b, ")");
      case BinaryOp::kSub: return absl::StrCat("(", a, " - ", b, ")");
      case BinaryOp::kMul: return absl::StrCat("(", a, " * ", b, ")");
      case BinaryOp::kDiv:
        return is_float ? absl::StrCat("(", a, " / ", b, ")") : absl::StrCat("ss_idiv(", a, ", ", b, ")");
      case BinaryOp::kRem:
        return is_float ? absl::StrCat("fmodf(", a, ", ", b, ")") : absl::StrCat("ss_irem(", a, ", ", b, ")");
      case BinaryOp::kMax:
        return is_float ? absl::StrCat("ss_fmax(", a, ", ", b, ")") : absl::StrCat("ss_max(", a, ", ", b, ")");
      case BinaryOp::kMin:
        return is_float ? absl::StrCat("ss_fmin(", a, ", ", b, ")") : absl::StrCat("ss_min(", a, ", ", b, ")");
    }
    return Unsupported("binary op", v.op);
  }
  std::string VisitCompare(const ValueNode& v, CompareOp op, Ops ops) override {
    return absl::StrCat("(", std::move(ops[0]), " ", CompareOpName(op), " ", std::move(ops[1]), ")");
  }
  std::string VisitSelect(const ValueNode& v, Ops ops) override {
    return absl::StrCat("(", std::move(ops[0]), " ? ", std::move(ops[1]), " : ", std::move(ops[2]), ")");
  }
  std::string VisitCast(const ValueNode& v, Ops ops) override {
    ScalarType from = v.operands[0]->type;
    if (v.type == ScalarType::kBool) {
      return from == ScalarType::kF32 ? absl::StrCat("(", std::move(ops[0]), " != 0.0f)")
                                      : absl::StrCat("(", std::move(ops[0]), " != 0)");
    }
    return absl::StrCat("((", CType(v.type), ")", std::move(ops[0]), ")");
  }
  std::string NullOperand() override { return Unsupported("null operand", 0); }

  // A node read more than once (a constant or a name aside) becomes a local
  // written before the statement; its readers name it.
  std::string AfterNode(const ValueNode& v, std::string text, int readers) override {
    if (readers <= 1 || v.kind == ValueKind::kConst || v.kind == ValueKind::kVar) return text;
    std::string local = absl::StrCat("t", next_local_++);
    absl::StrAppend(value_out_, value_pad_, "const ", CType(v.type), " ", local, " = ", text, ";\n");
    return local;
  }

  // The C text of `root`, a DAG (kernel_ir.h). Every node it reads more
  // than once (a constant or a name aside) becomes a local written once to
  // `out` at `pad` before the statement that uses the text, operands before
  // their readers (`const float t7 = (t6 * t6);`), and its readers name it:
  // the text stays linear in the DAG, and each node is one evaluation, as in
  // the CPU backend (llvm_lowering.cc emits each node once per statement).
  // The float operations are the tree's, in the same order.
  std::string Val(const Value& root, const std::string& pad, std::string* out) {
    if (!root) return Unsupported("null value", 0);
    value_pad_ = pad;
    value_out_ = out;
    return Fold(root);
  }

  // ---- Statements: sequential code of one thread -----------------------------
  // Accumulates into an accumulator being reduced across the block go to
  // the thread's partial.

  void EmitBlock(const std::vector<Stmt>& body, int depth, std::string* out) {
    for (const Stmt& s : body) StmtVisitor::Visit(s, depth, out);
  }

  static std::string Pad(int depth) { return std::string(2 * depth, ' '); }

  void VisitLoop(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    std::string var = Ident("i_", s.name);
    symbol_names_[s.name] = var;
    // An innermost loop of a constant trip count inside another loop (the
    // reductions' columns form: the row of partial results, updated once
    // per reduced row) is unrolled by 4 only: fully unrolled, ptxas keeps
    // every partial of the outer loop in registers and spills (24 columns:
    // 47 registers, 8 B spilled on sm_80; by 4: 32 registers, none).
    const std::optional<int64_t> trips = TripCount(s).AsConst();
    const bool innermost = std::none_of(s.body.begin(), s.body.end(),
                                        [](const Stmt& b) { return b.kind == StmtKind::kLoop; });
    if (loop_nesting_ > 0 && innermost && trips && *trips > 4) absl::StrAppend(out, pad, "#pragma unroll 4\n");
    absl::StrAppend(out, pad, "for (long long ", var, " = ", Sym(s.begin), "; ", var, " < ", Sym(s.end), "; ++", var,
                    ") {\n");
    ++loop_nesting_;
    EmitBlock(s.body, depth + 1, out);
    --loop_nesting_;
    absl::StrAppend(out, pad, "}\n");
    symbol_names_.erase(s.name);
  }
  void VisitStore(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    ScalarType t = kernel_.buffers[s.buffer].dtype;
    std::string value = Val(s.value, pad, out);
    if (t == ScalarType::kBool) value = absl::StrCat("(unsigned char)(", value, ")");
    absl::StrAppend(out, pad, BufferName(s.buffer), "[", Sym(s.index), "] = ", value, ";\n");
  }
  void VisitStoreAt(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    ScalarType t = kernel_.buffers[s.buffer].dtype;
    std::string value = Val(s.value, pad, out);
    if (t == ScalarType::kBool) value = absl::StrCat("(unsigned char)(", value, ")");
    std::string at = Val(s.at, pad, out);
    absl::StrAppend(out, pad, BufferName(s.buffer), "[", at, "] = ", value, ";\n");
  }
  void VisitLet(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    std::string value = Val(s.value, pad, out);
    absl::StrAppend(out, pad, "const ", CType(s.value->type), " ", Ident("v_", s.name), " = ", value, ";\n");
  }
  void VisitAccumulator(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    std::string value = Val(s.value, pad, out);
    absl::StrAppend(out, pad, CType(s.value->type), " ", Ident("v_", s.name), " = ", value, ";\n");
  }
  void VisitAccumulate(const Stmt& s, int depth, std::string* out) override {
    std::string pad = Pad(depth);
    std::string acc = partial_.contains(s.name) ? absl::StrCat("SS_P(", PartialName(s.name), ")") : VarRef(s.name);
    std::string value = Val(s.value, pad, out);
    absl::StrAppend(out, pad, acc, " = ", Combine(s.reduce, s.value->type, acc, value), ";\n");
  }

  const Kernel& kernel_;
  absl::flat_hash_map<std::string, std::string> symbol_names_;  // SymExpr symbol -> C name
  int loop_nesting_ = 0;  // loops around the statement being emitted (VisitLoop)
  absl::flat_hash_set<std::string> row_state_;  // top-level lets/accumulators of a block-per-row kernel
  absl::flat_hash_set<std::string> partial_;    // accumulators reduced by the loop being emitted
  absl::flat_hash_set<std::string> shared_;     // accumulators with a shared-memory tree
  int next_local_ = 0;                          // locals t0, t1, ... of shared value nodes
  std::string value_pad_;                       // where Val writes the locals of the value it folds
  std::string* value_out_ = nullptr;
};

void CudaEmitter::EmitRowLoop(const Stmt& s, const RowLoopPlan& loop, Phase* phase, std::string* out) {
  const std::string in = "      ";
  phase->Open();
  for (size_t k = 0; k < loop.reduced.size(); ++k) {
    absl::StrAppend(out, in, "SS_P(", PartialName(loop.reduced[k]), ") = ",
                    Identity(loop.ops[k], AccumulatorType(loop.reduced[k])), ";\n");
    partial_.insert(loop.reduced[k]);
  }
  std::string var = Ident("i_", s.name);
  symbol_names_[s.name] = var;
  absl::StrAppend(out, in, "for (long long ", var, " = ", Sym(s.begin), " + (long long)threadIdx.x; ", var, " < ",
                  Sym(s.end), "; ", var, " += (long long)blockDim.x) {\n");
  EmitBlock(s.body, 4, out);
  absl::StrAppend(out, in, "}\n");
  symbol_names_.erase(s.name);
  partial_.clear();
  for (const std::string& name : loop.reduced) {
    absl::StrAppend(out, in, SharedName(name), "[threadIdx.x] = SS_P(", PartialName(name), ");\n");
  }
  // The loop's stores become visible to the whole block before any later
  // statement reads them, whichever thread wrote them.
  phase->Close();
  if (loop.reduced.empty()) return;
  absl::StrAppend(out, "    for (unsigned ss_s = blockDim.x >> 1; ss_s > 0; ss_s >>= 1) {\n");
  absl::StrAppend(out, "      SS_THREADS {\n        if (threadIdx.x < ss_s) {\n");
  for (size_t k = 0; k < loop.reduced.size(); ++k) {
    std::string a = absl::StrCat(SharedName(loop.reduced[k]), "[threadIdx.x]");
    std::string b = absl::StrCat(SharedName(loop.reduced[k]), "[threadIdx.x + ss_s]");
    absl::StrAppend(out, "          ", a, " = ", Combine(loop.ops[k], AccumulatorType(loop.reduced[k]), a, b), ";\n");
  }
  absl::StrAppend(out, "        }\n      } SS_SYNC\n    }\n");
  phase->Open();
  for (size_t k = 0; k < loop.reduced.size(); ++k) {
    std::string acc = absl::StrCat("SS_P(", Ident("r_", loop.reduced[k]), ")");
    absl::StrAppend(out, in, acc, " = ",
                    Combine(loop.ops[k], AccumulatorType(loop.reduced[k]), acc,
                            absl::StrCat(SharedName(loop.reduced[k]), "[0]")),
                    ";\n");
  }
  // Every thread has read the tree's root before the next loop reuses it.
  phase->Close();
}

}  // namespace

const char* ThreadMappingName(ThreadMapping mapping) {
  switch (mapping) {
    case ThreadMapping::kFlat: return "flat";
    case ThreadMapping::kBlockPerRow: return "block-per-row";
    case ThreadMapping::kThreadPerIteration: return "thread-per-iteration";
  }
  return "?";
}

absl::StatusOr<CudaKernelSource> EmitCudaKernel(const Kernel& kernel, const std::string& entry_name) {
  if (absl::Status s = Verify(kernel); !s.ok()) return s;
  return CudaEmitter(kernel).Run(entry_name);
}

absl::StatusOr<std::string> EmitCudaSource(const Kernel& kernel, const std::string& entry_name) {
  absl::StatusOr<CudaKernelSource> k = EmitCudaKernel(kernel, entry_name);
  if (!k.ok()) return k.status();
  return CudaPrelude() + k->function;
}

LaunchShape ChooseLaunch(ThreadMapping mapping, int64_t work, int64_t row_length) {
  LaunchShape shape;
  if (mapping == ThreadMapping::kBlockPerRow) {
    // Enough threads for the row, a power of two (the tree needs it), at
    // least a warp.
    uint32_t block = 32;
    while (block < kMaxBlockThreads && block < row_length) block *= 2;
    shape.block = block;
    shape.grid = static_cast<uint32_t>(std::clamp<int64_t>(work, 1, kMaxGridBlocks));
    return shape;
  }
  shape.block = kMaxBlockThreads;
  int64_t blocks = work <= 0 ? 1 : (work + kMaxBlockThreads - 1) / kMaxBlockThreads;
  shape.grid = static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, kMaxGridBlocks));
  return shape;
}

}  // namespace shapeshift::codegen::cuda
