#include "codegen/cpu/llvm_lowering.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codegen/cpu/ir_arithmetic.h"
#include "codegen/cpu/loop_analysis.h"
#include "codegen/cpu/vector_math.h"
#include "codegen/kernel_visitor.h"
#include "shapes/sym_expr_visitor.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/MDBuilder.h"

namespace shapeshift::codegen::cpu {
namespace {

// A Let's value or an accumulator's scalar stack slot.
struct Binding {
  llvm::Value* value = nullptr;  // the let's value, or the accumulator's alloca
  bool is_accumulator = false;
  ScalarType type = ScalarType::kF32;
  int width = 1;  // lanes of a let's value
};

class KernelLowering : private ValueVisitor<llvm::Value*, int>, private StmtVisitor<void, int> {
 public:
  KernelLowering(const Kernel& kernel, const LoweringOptions& options, llvm::Module* module)
      : kernel_(kernel), options_(options), module_(module), ctx_(module->getContext()), b_(ctx_) {}

  absl::Status Run(const std::string& symbol) {
    EmitExtentFunction(symbol + "_extent");
    EmitKernelFunction(symbol);
    return status_;
  }

 private:
  // ---- Functions ----------------------------------------------------------

  llvm::Function* NewFunction(const std::string& name, llvm::FunctionType* type) {
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    if (!options_.cpu.empty()) fn->addFnAttr("target-cpu", options_.cpu);
    if (!options_.features.empty()) fn->addFnAttr("target-features", options_.features);
    int bits = options_.vector_width * 32;
    if (bits >= 512) {
      // Without these, LLVM splits 512-bit vectors into 256-bit halves on
      // CPUs where it prefers narrower vectors.
      fn->addFnAttr("prefer-vector-width", std::to_string(bits));
      fn->addFnAttr("min-legal-vector-width", std::to_string(bits));
    }
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(entry_);
    return fn;
  }

  void LoadDims(llvm::Value* dims_arg) {
    dims_.clear();
    for (size_t i = 0; i < kernel_.dims.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), dims_arg, i);
      dims_[kernel_.dims[i]] = b_.CreateLoad(b_.getInt64Ty(), slot, kernel_.dims[i]);
    }
  }

  void EmitExtentFunction(const std::string& name) {
    llvm::Type* i64 = b_.getInt64Ty();
    auto* type = llvm::FunctionType::get(i64, {i64->getPointerTo()}, false);
    llvm::Function* fn = NewFunction(name, type);
    LoadDims(fn->getArg(0));
    b_.CreateRet(EmitSym(kernel_.parallel_extent, 1));
  }

  void EmitKernelFunction(const std::string& name) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Type* i8p = b_.getInt8PtrTy();
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {i64, i64, i8p->getPointerTo(), i64->getPointerTo()}, false);
    llvm::Function* fn = NewFunction(name, type);
    for (unsigned arg : {2u, 3u}) {
      fn->addParamAttr(arg, llvm::Attribute::NoAlias);
      fn->addParamAttr(arg, llvm::Attribute::ReadOnly);
    }
    LoadDims(fn->getArg(3));
    for (size_t i = 0; i < kernel_.buffers.size(); ++i) {
      const BufferParam& param = kernel_.buffers[i];
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(i8p, fn->getArg(2), i);
      llvm::Value* raw = b_.CreateLoad(i8p, slot);
      buffers_.push_back(b_.CreateBitCast(raw, MemoryType(param.dtype)->getPointerTo(), param.name));
    }
    auto emit_parallel_loop = [&] {
      EmitLoop(kernel_.parallel_var, fn->getArg(0), fn->getArg(1), 1, /*vectorizer_off=*/false,
               [&](llvm::Value*) { EmitBlock(kernel_.body, 1); });
    };
    if (options_.masked_tail && options_.vector_width == 16) plan_ = PlanStreamingStores(kernel_);
    if (plan_.streamable.empty()) {
      emit_parallel_loop();
      b_.CreateRetVoid();
      return;
    }
    // Two versions of the whole loop, chosen per call by the bytes the
    // streamable stores write: outputs larger than the cache bypass it
    // (reads-for-ownership are a third memory stream for a kernel that
    // reads one row and writes one), smaller ones stay there for the next
    // kernel.
    llvm::BasicBlock* streaming = llvm::BasicBlock::Create(ctx_, "streaming", fn);
    llvm::BasicBlock* cached = llvm::BasicBlock::Create(ctx_, "cached", fn);
    llvm::Value* stream = b_.CreateICmpSGE(StreamedBytes(), b_.getInt64(options_.streaming_store_min_bytes));
    stream = b_.CreateAnd(stream, AllStreamedRowsAtLeast(kMinStreamedRowFloats));
    for (const auto& [buffer, row] : plan_.staged) {
      llvm::Value* length = b_.CreateSub(EmitSym(row.end, 1), EmitSym(row.begin, 1));
      stream = b_.CreateAnd(stream, b_.CreateICmpSLE(length, b_.getInt64(kStagedRowFloats)));
      llvm::AllocaInst* scratch =
          EntryAlloca(llvm::ArrayType::get(b_.getFloatTy(), kStagedRowFloats), kernel_.buffers[buffer].name + ".row");
      scratch->setAlignment(llvm::Align(64));
      staged_scratch_[buffer] = b_.CreateBitCast(scratch, b_.getFloatTy()->getPointerTo());
    }
    b_.CreateCondBr(stream, streaming, cached);
    b_.SetInsertPoint(streaming);
    streaming_ = true;
    emit_parallel_loop();
    // Non-temporal stores are weakly ordered: drain them before the caller's
    // barrier tells other threads the output is ready.
    b_.CreateCall(llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::x86_sse_sfence));
    b_.CreateRetVoid();
    b_.SetInsertPoint(cached);
    streaming_ = false;
    emit_parallel_loop();
    b_.CreateRetVoid();
  }

  // ---- Streaming (non-temporal) stores (plan: loop_analysis.h) -------------

  // Where an access goes: its buffer, or (streaming version) a staged row's
  // stack copy, with `index` rebased to the row's start.
  llvm::Value* AccessBase(int buffer, SymExpr* index, bool final_store) {
    auto it = plan_.staged.find(buffer);
    if (!streaming_ || final_store || it == plan_.staged.end()) return buffers_[buffer];
    *index = *index - index->Substitute({{vector_var_, it->second.begin}});
    return staged_scratch_.at(buffer);
  }

  // Bytes all streamable stores write over the whole parallel loop.
  llvm::Value* StreamedBytes() {
    llvm::Value* extent = EmitSym(kernel_.parallel_extent, 1);
    llvm::Value* total = b_.getInt64(0);
    for (const Stmt& loop : kernel_.body) {
      for (const Stmt& store : loop.body) {
        if (!plan_.streamable.contains(&store)) continue;
        llvm::Value* trips = b_.CreateSub(EmitSym(loop.end, 1), EmitSym(loop.begin, 1));
        trips = b_.CreateSelect(b_.CreateICmpSGT(trips, b_.getInt64(0)), trips, b_.getInt64(0));
        total = b_.CreateAdd(total, b_.CreateMul(b_.CreateMul(extent, trips), b_.getInt64(sizeof(float))));
      }
    }
    return total;
  }

  // Whether every loop holding a streamable store runs at least `floats`
  // iterations (the row each non-temporal store writes).
  llvm::Value* AllStreamedRowsAtLeast(int64_t floats) {
    llvm::Value* all = b_.getTrue();
    for (const Stmt& loop : kernel_.body) {
      const bool streams = std::any_of(loop.body.begin(), loop.body.end(),
                                       [&](const Stmt& store) { return plan_.streamable.contains(&store); });
      if (!streams) continue;
      llvm::Value* trips = b_.CreateSub(EmitSym(loop.end, 1), EmitSym(loop.begin, 1));
      all = b_.CreateAnd(all, b_.CreateICmpSGE(trips, b_.getInt64(floats)));
    }
    return all;
  }

  // The store a streaming vector loop aligns its rows for (the first
  // streamable one), or null.
  const Stmt* StreamedStoreOf(const Stmt& loop) const {
    if (!streaming_) return nullptr;
    for (const Stmt& s : loop.body) {
      if (plan_.streamable.contains(&s)) return &s;
    }
    return nullptr;
  }

  // ---- Types and constants ------------------------------------------------

  llvm::Type* ScalarLlvmType(ScalarType t) {
    switch (t) {
      case ScalarType::kF32: return b_.getFloatTy();
      case ScalarType::kI64: return b_.getInt64Ty();
      case ScalarType::kI32: return b_.getInt32Ty();
      case ScalarType::kBool: return b_.getInt1Ty();
    }
    return nullptr;
  }
  llvm::Type* MemoryType(ScalarType t) { return t == ScalarType::kBool ? b_.getInt8Ty() : ScalarLlvmType(t); }
  llvm::Type* Widen(llvm::Type* t, int width) {
    return width == 1 ? t : llvm::FixedVectorType::get(t, width);
  }
  llvm::Type* LlvmType(ScalarType t, int width) { return Widen(ScalarLlvmType(t), width); }
  llvm::Value* Splat(llvm::Value* v, int width) {
    return width == 1 || v->getType()->isVectorTy() ? v : b_.CreateVectorSplat(width, v);
  }
  llvm::Value* I64Const(int64_t v, int width) {
    return llvm::ConstantInt::get(Widen(b_.getInt64Ty(), width), v, /*isSigned=*/true);
  }

  void Fail(const std::string& message) {
    if (status_.ok()) {
      status_ = absl::InternalError(absl::StrCat("kernel '", kernel_.name, "': ", message));
    }
  }

  // ---- Index arithmetic (SymExpr) -------------------------------------------

  // Floor semantics (shapes/sym_expr.h): the quotient rounds toward -inf and
  // the remainder has the divisor's sign.
  llvm::Value* NeedsFloorFix(llvm::Value* rem, llvm::Value* divisor, int width) {
    llvm::Value* zero = I64Const(0, width);
    llvm::Value* nonzero = b_.CreateICmpNE(rem, zero);
    llvm::Value* signs_differ = b_.CreateICmpNE(b_.CreateICmpSLT(rem, zero), b_.CreateICmpSLT(divisor, zero));
    return b_.CreateAnd(nonzero, signs_differ);
  }

  llvm::Value* EmitSym(SymExpr e, int width) { return IndexEmitter(*this).Visit(e, width); }

  // An index expression as i64 (<W x i64> for width > 1), operands first,
  // each operand emitted where it occurs (indices are small trees).
  class IndexEmitter final : public SymExprVisitor<llvm::Value*, int> {
   public:
    explicit IndexEmitter(KernelLowering& l) : l_(l), b_(l.b_) {}

   private:
    llvm::Value* VisitConst(const SymExpr&, int64_t value, int width) override { return l_.I64Const(value, width); }
    llvm::Value* VisitSymbol(const SymExpr&, const std::string& name, int width) override {
      return l_.EmitSymbol(name, width);
    }
    llvm::Value* VisitAdd(const SymExpr&, absl::Span<const SymExpr> ops, int width) override {
      llvm::Value* acc = l_.EmitSym(ops[0], width);
      for (size_t i = 1; i < ops.size(); ++i) acc = b_.CreateAdd(acc, l_.EmitSym(ops[i], width));
      return acc;
    }
    llvm::Value* VisitMul(const SymExpr&, absl::Span<const SymExpr> ops, int width) override {
      llvm::Value* acc = l_.EmitSym(ops[0], width);
      for (size_t i = 1; i < ops.size(); ++i) acc = b_.CreateMul(acc, l_.EmitSym(ops[i], width));
      return acc;
    }
    llvm::Value* VisitFloorDiv(const SymExpr&, const SymExpr& x, const SymExpr& y, int width) override {
      llvm::Value* a = l_.EmitSym(x, width);
      llvm::Value* d = l_.EmitSym(y, width);
      llvm::Value* q = b_.CreateSDiv(a, d);
      llvm::Value* fix = l_.NeedsFloorFix(b_.CreateSRem(a, d), d, width);
      return b_.CreateSelect(fix, b_.CreateSub(q, l_.I64Const(1, width)), q);
    }
    llvm::Value* VisitMod(const SymExpr&, const SymExpr& x, const SymExpr& y, int width) override {
      llvm::Value* d = l_.EmitSym(y, width);
      llvm::Value* r = b_.CreateSRem(l_.EmitSym(x, width), d);
      return b_.CreateSelect(l_.NeedsFloorFix(r, d, width), b_.CreateAdd(r, d), r);
    }
    llvm::Value* VisitMin(const SymExpr&, const SymExpr& x, const SymExpr& y, int width) override {
      llvm::Value* a = l_.EmitSym(x, width);
      llvm::Value* c = l_.EmitSym(y, width);
      llvm::Value* a_less = b_.CreateICmpSLT(a, c);
      return b_.CreateSelect(a_less, a, c);
    }
    llvm::Value* VisitMax(const SymExpr&, const SymExpr& x, const SymExpr& y, int width) override {
      llvm::Value* a = l_.EmitSym(x, width);
      llvm::Value* c = l_.EmitSym(y, width);
      llvm::Value* a_less = b_.CreateICmpSLT(a, c);
      return b_.CreateSelect(a_less, c, a);
    }

    KernelLowering& l_;
    llvm::IRBuilder<>& b_;
  };

  llvm::Value* EmitSymbol(const std::string& name, int width) {
    if (auto it = loop_vars_.find(name); it != loop_vars_.end()) {
      llvm::Value* v = Splat(it->second, width);
      if (width > 1 && name == vector_var_) {
        std::vector<llvm::Constant*> lanes;
        for (int i = 0; i < width; ++i) lanes.push_back(b_.getInt64(i));
        v = b_.CreateAdd(v, llvm::ConstantVector::get(lanes));
      }
      return v;
    }
    if (auto it = dims_.find(name); it != dims_.end()) return Splat(it->second, width);
    Fail("unbound symbol '" + name + "'");
    return I64Const(0, width);
  }

  Access Classify(SymExpr index) {
    return vector_var_.empty() ? Access::kUniform : ClassifyIndex(index, vector_var_);
  }

  // ---- Memory --------------------------------------------------------------

  llvm::Value* EmitLoad(int buffer, SymExpr index, ScalarType type, int width) {
    llvm::Value* base = AccessBase(buffer, &index, /*final_store=*/false);
    llvm::Type* mem = MemoryType(type);
    llvm::Align align(ScalarTypeSize(type));
    Access access = width == 1 ? Access::kUniform : Classify(index);
    llvm::Value* loaded;
    llvm::Value* mask = width > 1 ? tail_mask_ : nullptr;
    if (access == Access::kGather) {
      llvm::Value* ptrs = b_.CreateGEP(mem, base, EmitSym(index, width));
      loaded = b_.CreateMaskedGather(Widen(mem, width), ptrs, align, mask);
    } else {
      llvm::Value* ptr = b_.CreateGEP(mem, base, EmitSym(index, 1));
      if (access == Access::kContiguous) {
        llvm::Type* vec = Widen(mem, width);
        llvm::Value* vec_ptr = b_.CreateBitCast(ptr, vec->getPointerTo());
        if (mask) {
          loaded = b_.CreateMaskedLoad(vec, vec_ptr, align, mask, llvm::Constant::getNullValue(vec));
        } else {
          loaded = b_.CreateAlignedLoad(vec, vec_ptr, align);
        }
      } else {  // lane 0 is always active, so its address is valid
        loaded = Splat(b_.CreateAlignedLoad(mem, ptr, align), width);
      }
    }
    if (type == ScalarType::kBool) loaded = b_.CreateICmpNE(loaded, llvm::Constant::getNullValue(loaded->getType()));
    return loaded;
  }

  // buffer[index] at a data-dependent i64 `index` (one per lane): a masked
  // gather in vector code, so inactive tail lanes read nothing.
  llvm::Value* EmitLoadAt(int buffer, llvm::Value* index, ScalarType type, int width) {
    llvm::Value* base = buffers_[buffer];
    llvm::Type* mem = MemoryType(type);
    llvm::Align align(ScalarTypeSize(type));
    llvm::Value* loaded;
    if (width == 1) {
      loaded = b_.CreateAlignedLoad(mem, b_.CreateGEP(mem, base, index), align);
    } else {
      llvm::Value* ptrs = b_.CreateGEP(mem, base, Splat(index, width));
      loaded = b_.CreateMaskedGather(Widen(mem, width), ptrs, align, tail_mask_);
    }
    if (type == ScalarType::kBool) loaded = b_.CreateICmpNE(loaded, llvm::Constant::getNullValue(loaded->getType()));
    return loaded;
  }

  // buffer[index] = value at a data-dependent i64 `index` per lane: a masked
  // scatter in vector code (the lowering keeps the lanes' addresses distinct).
  void EmitStoreAt(int buffer, llvm::Value* index, ScalarType type, llvm::Value* value, int width) {
    llvm::Value* base = buffers_[buffer];
    llvm::Type* mem = MemoryType(type);
    llvm::Align align(ScalarTypeSize(type));
    if (type == ScalarType::kBool) value = b_.CreateZExt(value, Widen(mem, width));
    if (width == 1) {
      b_.CreateAlignedStore(value, b_.CreateGEP(mem, base, index), align);
      return;
    }
    b_.CreateMaskedScatter(value, b_.CreateGEP(mem, base, Splat(index, width)), align, tail_mask_);
  }

  // `last`: a streamable store (never redirected to a staged row);
  // `streamed`: the aligned store of a streaming main loop (non-temporal).
  void EmitStore(int buffer, SymExpr index, ScalarType type, llvm::Value* value, int width, bool last,
                 bool streamed) {
    llvm::Value* base = AccessBase(buffer, &index, last);
    llvm::Type* mem = MemoryType(type);
    llvm::Align align(ScalarTypeSize(type));
    if (type == ScalarType::kBool) value = b_.CreateZExt(value, Widen(mem, width));
    Access access = width == 1 ? Access::kUniform : Classify(index);
    llvm::Value* mask = width > 1 ? tail_mask_ : nullptr;
    if (access == Access::kGather) {
      llvm::Value* ptrs = b_.CreateGEP(mem, base, EmitSym(index, width));
      b_.CreateMaskedScatter(value, ptrs, align, mask);
      return;
    }
    llvm::Value* ptr = b_.CreateGEP(mem, base, EmitSym(index, 1));
    if (access == Access::kContiguous) {
      llvm::Value* vec_ptr = b_.CreateBitCast(ptr, value->getType()->getPointerTo());
      if (mask) {
        b_.CreateMaskedStore(value, vec_ptr, align, mask);
      } else if (streamed) {
        // The masked head made this address a multiple of 64 (vmovntps needs it).
        llvm::StoreInst* store = b_.CreateAlignedStore(value, vec_ptr, llvm::Align(64));
        store->setMetadata(llvm::LLVMContext::MD_nontemporal,
                           llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
      } else {
        b_.CreateAlignedStore(value, vec_ptr, align);
      }
    } else {
      // Every lane writes the same place; the last (active) iteration wins, as in order.
      if (width > 1) value = b_.CreateExtractElement(value, mask ? tail_last_lane_ : b_.getInt64(width - 1));
      b_.CreateAlignedStore(value, ptr, align);
    }
  }

  // ---- Values ----------------------------------------------------------------

  // A statement's value is a DAG (kernel_ir.h): each node is emitted once
  // per statement (the emission point does not move within one value, so
  // the first emission dominates every reuse).
  llvm::Value* EmitValue(const Value& v, int width) {
    if (emitting_value_ == 0) emitted_.clear();
    auto [it, inserted] = emitted_.try_emplace(v.get(), nullptr);
    if (!inserted) return it->second;
    ++emitting_value_;
    llvm::Value* result = EmitValueOnce(v, width);
    --emitting_value_;
    emitted_[v.get()] = result;
    return result;
  }

  llvm::Value* EmitValueOnce(const Value& v, int width) { return ValueVisitor::Visit(*v, width); }

  // One node; its operands are emitted (or found) by EmitValue, in the
  // order each line below asks for them.
  llvm::Value* VisitConst(const ValueNode& v, int width) override {
    if (v.type == ScalarType::kF32) return llvm::ConstantFP::get(LlvmType(v.type, width), v.f_value);
    return llvm::ConstantInt::get(LlvmType(v.type, width), v.i_value, /*isSigned=*/true);
  }
  llvm::Value* VisitLoad(const ValueNode& v, int width) override { return EmitLoad(v.buffer, v.index, v.type, width); }
  llvm::Value* VisitLoadAt(const ValueNode& v, int width) override {
    return EmitLoadAt(v.buffer, EmitValue(v.operands[0], width), v.type, width);
  }
  llvm::Value* VisitIndex(const ValueNode& v, int width) override { return EmitSym(v.index, width); }
  llvm::Value* VisitVar(const ValueNode& v, int width) override {
    auto it = bindings_.find(v.name);
    if (it == bindings_.end()) {
      Fail("unbound name '" + v.name + "'");
      return llvm::Constant::getNullValue(LlvmType(v.type, width));
    }
    const Binding& bind = it->second;
    if (bind.is_accumulator) return Splat(b_.CreateLoad(ScalarLlvmType(bind.type), bind.value), width);
    return Splat(bind.value, width);
  }
  llvm::Value* VisitUnary(const ValueNode& v, UnaryOp op, int width) override {
    return EmitUnary(op, EmitValue(v.operands[0], width), v.type);
  }
  llvm::Value* VisitBinary(const ValueNode& v, BinaryOp op, int width) override {
    if (const Value* u = OnePlusTanhArgument(v)) return EmitOnePlusTanh(b_, EmitValue(*u, width));
    return EmitBinary(op, EmitValue(v.operands[0], width), EmitValue(v.operands[1], width), v.type);
  }
  llvm::Value* VisitCompare(const ValueNode& v, CompareOp op, int width) override {
    return EmitCompare(op, EmitValue(v.operands[0], width), EmitValue(v.operands[1], width), v.operands[0]->type);
  }
  llvm::Value* VisitSelect(const ValueNode& v, int width) override {
    return b_.CreateSelect(EmitValue(v.operands[0], width), EmitValue(v.operands[1], width),
                           EmitValue(v.operands[2], width));
  }
  llvm::Value* VisitCast(const ValueNode& v, int width) override {
    return EmitCast(EmitValue(v.operands[0], width), v.operands[0]->type, v.type, width);
  }

  // u when v is 1 + tanh(u) (either order): GELU's tanh form, emitted as
  // 2·sigmoid(2u), cheaper and more accurate (vector_math.h).
  static const Value* OnePlusTanhArgument(const ValueNode& v) {
    if (v.type != ScalarType::kF32 || static_cast<BinaryOp>(v.op) != BinaryOp::kAdd) return nullptr;
    auto is_one = [](const Value& c) { return c->kind == ValueKind::kConst && c->f_value == 1.0; };
    auto is_tanh = [](const Value& t) {
      return t->kind == ValueKind::kUnary && static_cast<UnaryOp>(t->op) == UnaryOp::kTanh;
    };
    for (int i : {0, 1}) {
      if (is_one(v.operands[i]) && is_tanh(v.operands[1 - i])) return &v.operands[1 - i]->operands[0];
    }
    return nullptr;
  }

  // The IR's operations (ir_arithmetic.h); an op no enumerator names fails
  // the kernel.
  llvm::Value* EmitUnary(UnaryOp op, llvm::Value* x, ScalarType type) {
    if (llvm::Value* r = math_.Unary(op, x, type)) return r;
    Fail("unknown unary op");
    return x;
  }
  llvm::Value* EmitBinary(BinaryOp op, llvm::Value* a, llvm::Value* c, ScalarType type) {
    if (llvm::Value* r = math_.Binary(op, a, c, type)) return r;
    Fail("unknown binary op");
    return a;
  }
  llvm::Value* EmitCompare(CompareOp op, llvm::Value* a, llvm::Value* c, ScalarType operand_type) {
    if (llvm::Value* r = math_.Compare(op, a, c, operand_type)) return r;
    Fail("unknown comparison");
    return a;
  }
  llvm::Value* EmitCast(llvm::Value* x, ScalarType from, ScalarType to, int width) {
    return math_.Cast(x, from, to, LlvmType(to, width));
  }
  llvm::Value* Combine(ReduceOp op, ScalarType type, llvm::Value* acc, llvm::Value* x) {
    return math_.Combine(op, type, acc, x);
  }
  llvm::Value* Identity(ReduceOp op, ScalarType type, int width) { return math_.Identity(op, type, LlvmType(type, width)); }
  llvm::Value* HorizontalReduce(ReduceOp op, ScalarType type, llvm::Value* vec) {
    return math_.HorizontalReduce(op, type, vec);
  }

  llvm::AllocaInst* EntryAlloca(llvm::Type* type, const std::string& name) {
    llvm::IRBuilder<> entry(entry_, entry_->getFirstInsertionPt());
    return entry.CreateAlloca(type, nullptr, name);
  }

  // ---- Statements ---------------------------------------------------------------

  // for var in [begin, end) step `step`; the body is emitted once by `body`.
  void EmitLoop(const std::string& var, llvm::Value* begin, llvm::Value* end, int64_t step,
                bool vectorizer_off, const std::function<void(llvm::Value*)>& body) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, var + ".header", fn);
    llvm::BasicBlock* body_block = llvm::BasicBlock::Create(ctx_, var + ".body", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, var + ".exit", fn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, var);
    i->addIncoming(begin, preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), body_block, exit);
    b_.SetInsertPoint(body_block);
    loop_vars_[var] = i;
    body(i);
    loop_vars_.erase(var);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(step), var + ".next", /*HasNUW=*/false, /*HasNSW=*/true);
    llvm::BranchInst* back = b_.CreateBr(header);
    if (vectorizer_off) back->setMetadata(llvm::LLVMContext::MD_loop, NoVectorizeLoopId());
    i->addIncoming(next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
  }

  // Remainder loops run < W iterations; vectorizing or unrolling them again
  // only costs compile time and code size.
  llvm::MDNode* NoVectorizeLoopId() {
    llvm::Metadata* off[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                             llvm::ConstantAsMetadata::get(b_.getFalse())};
    llvm::Metadata* no_unroll[] = {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")};
    llvm::TempMDTuple placeholder = llvm::MDNode::getTemporary(ctx_, {});
    llvm::Metadata* ops[] = {placeholder.get(), llvm::MDNode::get(ctx_, off), llvm::MDNode::get(ctx_, no_unroll)};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    return id;
  }

  void EmitVectorizedLoop(const Stmt& loop, llvm::Value* begin, llvm::Value* end,
                          const absl::btree_map<std::string, ReduceOp>& reduced) {
    const int w = options_.vector_width;
    for (const auto& [name, op] : reduced) {
      const Binding& acc = bindings_[name];
      llvm::AllocaInst* slot = EntryAlloca(LlvmType(acc.type, w), name + ".vec");
      b_.CreateStore(Identity(op, acc.type, w), slot);
      vector_accumulators_[name] = slot;
    }
    vector_var_ = loop.name;
    const Stmt* streamed = StreamedStoreOf(loop);
    if (streamed != nullptr) begin = EmitAlignmentHead(loop, *streamed, begin, end);
    llvm::Value* count = b_.CreateSub(end, begin);
    count = b_.CreateSelect(b_.CreateICmpSGT(count, b_.getInt64(0)), count, b_.getInt64(0));
    llvm::Value* vector_end = b_.CreateAdd(begin, b_.CreateMul(b_.CreateSDiv(count, b_.getInt64(w)), b_.getInt64(w)));
    aligned_stream_store_ = streamed;
    EmitLoop(loop.name, begin, vector_end, w, /*vectorizer_off=*/false,
             [&](llvm::Value*) { EmitBlock(loop.body, w); });
    aligned_stream_store_ = nullptr;
    if (options_.masked_tail) EmitMaskedTail(loop, vector_end, end);
    vector_var_.clear();
    for (const auto& [name, op] : reduced) {
      const Binding& acc = bindings_[name];
      llvm::Value* vec = b_.CreateLoad(LlvmType(acc.type, w), vector_accumulators_[name]);
      llvm::Value* scalar = b_.CreateLoad(ScalarLlvmType(acc.type), acc.value);
      b_.CreateStore(Combine(op, acc.type, scalar, HorizontalReduce(op, acc.type, vec)), acc.value);
    }
    vector_accumulators_.clear();
    if (!options_.masked_tail) {
      EmitLoop(loop.name, vector_end, end, 1, /*vectorizer_off=*/true,
               [&](llvm::Value*) { EmitBlock(loop.body, 1); });
    }
  }

  // Runs the first (-address / 4) mod 16 iterations as one masked iteration so
  // that `store`'s address is 64-byte aligned in the main loop; returns the
  // main loop's first iteration.
  llvm::Value* EmitAlignmentHead(const Stmt& loop, const Stmt& store, llvm::Value* begin, llvm::Value* end) {
    loop_vars_[loop.name] = begin;
    vector_var_.clear();  // a scalar index: the row's first element
    llvm::Value* first_index = EmitSym(store.index, 1);
    vector_var_ = loop.name;
    loop_vars_.erase(loop.name);
    llvm::Value* address = b_.CreatePtrToInt(b_.CreateGEP(b_.getFloatTy(), buffers_[store.buffer], first_index),
                                             b_.getInt64Ty());
    llvm::Value* misaligned = b_.CreateAnd(b_.CreateLShr(address, b_.getInt64(2)), b_.getInt64(15));
    llvm::Value* peel = b_.CreateAnd(b_.CreateSub(b_.getInt64(16), misaligned), b_.getInt64(15));
    llvm::Value* head_end = b_.CreateAdd(begin, peel);
    head_end = b_.CreateSelect(b_.CreateICmpSLT(head_end, end), head_end, end);
    EmitMaskedTail(loop, begin, head_end);
    return head_end;
  }

  // Iterations [tail_begin, end) (fewer than W) as one vector iteration whose
  // inactive lanes neither load, store nor contribute to reductions.
  void EmitMaskedTail(const Stmt& loop, llvm::Value* tail_begin, llvm::Value* end) {
    const int w = options_.vector_width;
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* tail = llvm::BasicBlock::Create(ctx_, loop.name + ".tail", fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, loop.name + ".tail.done", fn);
    b_.CreateCondBr(b_.CreateICmpSLT(tail_begin, end), tail, done);
    b_.SetInsertPoint(tail);
    std::vector<llvm::Constant*> lanes;
    for (int i = 0; i < w; ++i) lanes.push_back(b_.getInt64(i));
    llvm::Value* lane_index = b_.CreateAdd(Splat(tail_begin, w), llvm::ConstantVector::get(lanes));
    tail_mask_ = b_.CreateICmpSLT(lane_index, Splat(end, w));
    tail_last_lane_ = b_.CreateSub(b_.CreateSub(end, tail_begin), b_.getInt64(1));
    loop_vars_[loop.name] = tail_begin;
    EmitBlock(loop.body, w);
    loop_vars_.erase(loop.name);
    tail_mask_ = nullptr;
    tail_last_lane_ = nullptr;
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  void EmitBlock(const std::vector<Stmt>& body, int width) {
    absl::flat_hash_map<std::string, Binding> saved = bindings_;
    for (const Stmt& s : body) EmitStmt(s, width);
    bindings_ = std::move(saved);
  }

  void EmitStmt(const Stmt& s, int width) { StmtVisitor::Visit(s, width); }

  void VisitLoop(const Stmt& s, int width) override {
    llvm::Value* begin = EmitSym(s.begin, 1);
    llvm::Value* end = EmitSym(s.end, 1);
    absl::btree_map<std::string, ReduceOp> reduced;
    if (options_.vector_width > 1 && CanVectorize(s, &reduced)) {
      EmitVectorizedLoop(s, begin, end, reduced);
    } else {
      EmitLoop(s.name, begin, end, 1, /*vectorizer_off=*/false, [&](llvm::Value*) { EmitBlock(s.body, 1); });
    }
  }
  void VisitStore(const Stmt& s, int width) override {
    EmitStore(s.buffer, s.index, kernel_.buffers[s.buffer].dtype, EmitValue(s.value, width), width,
              plan_.streamable.contains(&s), width > 1 && &s == aligned_stream_store_ && tail_mask_ == nullptr);
  }
  void VisitStoreAt(const Stmt& s, int width) override {
    EmitStoreAt(s.buffer, EmitValue(s.at, width), kernel_.buffers[s.buffer].dtype, EmitValue(s.value, width), width);
  }
  void VisitLet(const Stmt& s, int width) override {
    bindings_[s.name] = Binding{EmitValue(s.value, width), false, s.value->type, width};
  }
  void VisitAccumulator(const Stmt& s, int width) override {
    llvm::AllocaInst* slot = EntryAlloca(ScalarLlvmType(s.value->type), s.name);
    b_.CreateStore(EmitValue(s.value, 1), slot);
    bindings_[s.name] = Binding{slot, true, s.value->type, 1};
  }
  void VisitAccumulate(const Stmt& s, int width) override {
    const Binding& acc = bindings_[s.name];
    llvm::Value* x = EmitValue(s.value, width);
    auto vec = vector_accumulators_.find(s.name);
    if (width > 1 && vec != vector_accumulators_.end()) {
      llvm::Type* t = LlvmType(acc.type, width);
      if (tail_mask_) x = b_.CreateSelect(tail_mask_, x, Identity(s.reduce, acc.type, width));
      b_.CreateStore(Combine(s.reduce, acc.type, b_.CreateLoad(t, vec->second), x), vec->second);
    } else {
      llvm::Value* current = b_.CreateLoad(ScalarLlvmType(acc.type), acc.value);
      b_.CreateStore(Combine(s.reduce, acc.type, current, x), acc.value);
    }
  }

  const Kernel& kernel_;
  const LoweringOptions& options_;
  llvm::Module* module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  IrArithmetic math_{b_};
  absl::Status status_;
  llvm::BasicBlock* entry_ = nullptr;
  absl::flat_hash_map<std::string, llvm::Value*> dims_;
  absl::flat_hash_map<std::string, llvm::Value*> loop_vars_;
  absl::flat_hash_map<std::string, Binding> bindings_;
  std::vector<llvm::Value*> buffers_;
  std::string vector_var_;  // the loop variable of the vector loop being emitted
  llvm::Value* tail_mask_ = nullptr;       // <W x i1> active lanes, in a masked tail
  llvm::Value* tail_last_lane_ = nullptr;  // index of the last active lane (i64)
  absl::flat_hash_map<std::string, llvm::AllocaInst*> vector_accumulators_;
  StreamingPlan plan_;                                    // empty without AVX-512 masked loops
  absl::flat_hash_map<int, llvm::Value*> staged_scratch_;  // float* of each staged row, by buffer
  bool streaming_ = false;                       // emitting the version for large outputs
  const Stmt* aligned_stream_store_ = nullptr;   // the non-temporal store of the main loop being emitted
  absl::flat_hash_map<const ValueNode*, llvm::Value*> emitted_;  // nodes of the value being emitted
  int emitting_value_ = 0;                                       // EmitValue nesting
};

}  // namespace

absl::Status LowerKernel(const Kernel& kernel, const LoweringOptions& options, const std::string& symbol,
                         llvm::Module* module) {
  return KernelLowering(kernel, options, module).Run(symbol);
}

}  // namespace shapeshift::codegen::cpu
