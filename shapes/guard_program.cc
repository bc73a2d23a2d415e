#include "shapes/guard_program.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift {

using Op = GuardProgram::Op;
using Instr = GuardProgram::Instr;

// Lowers predicates to bytecode, sharing every SymExpr computed once.
class GuardCompiler {
 public:
  explicit GuardCompiler(GuardProgram* program) : p_(program) {
    for (size_t i = 0; i < p_->slots_.size(); ++i) slot_index_[p_->slots_[i]] = i;
  }

  absl::Status CompileAtom(const Predicate& atom, size_t index) {
    absl::StatusOr<uint32_t> r = Pred(atom);
    if (!r.ok()) return r.status();
    // Peephole: an atom that is one comparison with a constant was just
    // emitted into a fresh register nobody else reads; fuse it with its check.
    Instr& last = p_->code_.back();
    if (std::optional<Op> fused = FusedCheck(last.op); fused && last.dst == *r) {
      last.op = *fused;
      last.dst = static_cast<uint32_t>(index);
      --p_->num_registers_;
      return absl::OkStatus();
    }
    Emit({Op::kCheck, 0, *r, 0, static_cast<int64_t>(index)});
    return absl::OkStatus();
  }

 private:
  static std::optional<Op> FusedCheck(Op op) {
    switch (op) {
      case Op::kEqImm: return Op::kCheckEqImm;
      case Op::kNeImm: return Op::kCheckNeImm;
      case Op::kLtImm: return Op::kCheckLtImm;
      case Op::kLeImm: return Op::kCheckLeImm;
      case Op::kGtImm: return Op::kCheckGtImm;
      case Op::kGeImm: return Op::kCheckGeImm;
      case Op::kDivisible: return Op::kCheckDivisible;
      default: return std::nullopt;
    }
  }

  uint32_t NewRegister() { return static_cast<uint32_t>(p_->num_registers_++); }
  uint32_t Emit(Instr in) {
    if (in.op != Op::kCheck) in.dst = NewRegister();
    p_->code_.push_back(in);
    return in.dst;
  }

  absl::StatusOr<uint32_t> Expr(SymExpr e) {
    if (auto it = cache_.find(e); it != cache_.end()) return it->second;
    absl::StatusOr<uint32_t> r = Lower(e);
    if (r.ok()) cache_[e] = *r;
    return r;
  }

  absl::StatusOr<uint32_t> Lower(SymExpr e) {
    switch (e.kind()) {
      case ExprKind::kConst:
        return Emit({Op::kConst, 0, 0, 0, *e.AsConst()});
      case ExprKind::kSymbol: {
        auto it = slot_index_.find(e.symbol_name());
        if (it == slot_index_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("guard mentions symbol '", e.symbol_name(), "' that has no slot"));
        }
        return Emit({Op::kLoadSlot, 0, static_cast<uint32_t>(it->second), 0, 0});
      }
      case ExprKind::kAdd:
      case ExprKind::kMul: {
        const bool add = e.kind() == ExprKind::kAdd;
        // Evaluation order matches SymExpr::Evaluate (left to right), so
        // overflow is detected on the same partial results; only a
        // constant operand is folded into the instruction.
        absl::StatusOr<uint32_t> acc = Expr(e.operands()[0]);
        for (size_t i = 1; acc.ok() && i < e.operands().size(); ++i) {
          SymExpr operand = e.operands()[i];
          if (auto c = operand.AsConst()) {
            acc = Emit({add ? Op::kAddImm : Op::kMulImm, 0, *acc, 0, *c});
            continue;
          }
          absl::StatusOr<uint32_t> next = Expr(operand);
          if (!next.ok()) return next;
          acc = Emit({add ? Op::kAdd : Op::kMul, 0, *acc, *next, 0});
        }
        return acc;
      }
      default:
        break;
    }
    absl::StatusOr<uint32_t> a = Expr(e.operands()[0]);
    if (!a.ok()) return a;
    if (auto d = e.operands()[1].AsConst(); d && *d != 0 &&
        (e.kind() == ExprKind::kFloorDiv || e.kind() == ExprKind::kMod)) {
      return Emit({e.kind() == ExprKind::kFloorDiv ? Op::kFloorDivImm : Op::kModImm, 0, *a, 0, *d});
    }
    absl::StatusOr<uint32_t> b = Expr(e.operands()[1]);
    if (!b.ok()) return b;
    Op op = e.kind() == ExprKind::kFloorDiv ? Op::kFloorDiv
            : e.kind() == ExprKind::kMod    ? Op::kMod
            : e.kind() == ExprKind::kMin    ? Op::kMin
                                            : Op::kMax;
    return Emit({op, 0, *a, *b, 0});
  }

  absl::StatusOr<uint32_t> Pred(const Predicate& p) {
    switch (p.kind()) {
      case PredKind::kTrue:
      case PredKind::kFalse:
        return Emit({Op::kConst, 0, 0, 0, p.kind() == PredKind::kTrue ? 1 : 0});
      case PredKind::kNot: {
        absl::StatusOr<uint32_t> c = Pred(p.children()[0]);
        if (!c.ok()) return c;
        return Emit({Op::kNot, 0, *c, 0, 0});
      }
      case PredKind::kAnd:
      case PredKind::kOr: {
        // No short-circuit, like Predicate::Evaluate: an error anywhere fails.
        const Op op = p.kind() == PredKind::kAnd ? Op::kAnd : Op::kOr;
        absl::StatusOr<uint32_t> acc = Pred(p.children()[0]);
        for (size_t i = 1; acc.ok() && i < p.children().size(); ++i) {
          absl::StatusOr<uint32_t> next = Pred(p.children()[i]);
          if (!next.ok()) return next;
          acc = Emit({op, 0, *acc, *next, 0});
        }
        return acc;
      }
      case PredKind::kDivisible: {
        absl::StatusOr<uint32_t> a = Expr(p.lhs());
        if (!a.ok()) return a;
        return Emit({Op::kDivisible, 0, *a, 0, *p.rhs().AsConst()});
      }
      default:
        break;
    }
    absl::StatusOr<uint32_t> lhs = Expr(p.lhs());
    if (!lhs.ok()) return lhs;
    if (auto c = p.rhs().AsConst()) {
      Op op = p.kind() == PredKind::kEq   ? Op::kEqImm
              : p.kind() == PredKind::kNe ? Op::kNeImm
              : p.kind() == PredKind::kLt ? Op::kLtImm
              : p.kind() == PredKind::kLe ? Op::kLeImm
              : p.kind() == PredKind::kGt ? Op::kGtImm
                                          : Op::kGeImm;
      return Emit({op, 0, *lhs, 0, *c});
    }
    absl::StatusOr<uint32_t> rhs = Expr(p.rhs());
    if (!rhs.ok()) return rhs;
    switch (p.kind()) {
      case PredKind::kEq: return Emit({Op::kEq, 0, *lhs, *rhs, 0});
      case PredKind::kNe: return Emit({Op::kNe, 0, *lhs, *rhs, 0});
      case PredKind::kLt: return Emit({Op::kLt, 0, *lhs, *rhs, 0});
      case PredKind::kLe: return Emit({Op::kLe, 0, *lhs, *rhs, 0});
      case PredKind::kGt: return Emit({Op::kLt, 0, *rhs, *lhs, 0});
      default: return Emit({Op::kLe, 0, *rhs, *lhs, 0});  // kGe
    }
  }

  GuardProgram* p_;
  absl::flat_hash_map<std::string, size_t> slot_index_;
  absl::flat_hash_map<SymExpr, uint32_t> cache_;
};

absl::StatusOr<GuardProgram> GuardProgram::Compile(absl::Span<const Predicate> atoms) {
  absl::btree_set<std::string> names;
  for (const Predicate& a : atoms) a.CollectSymbols(&names);
  return Compile(atoms, std::vector<std::string>(names.begin(), names.end()));
}

absl::StatusOr<GuardProgram> GuardProgram::Compile(absl::Span<const Predicate> atoms,
                                                   std::vector<std::string> slot_order) {
  GuardProgram program;
  absl::btree_set<std::string> seen;
  for (const std::string& s : slot_order) {
    if (!seen.insert(s).second) {
      return absl::InvalidArgumentError(absl::StrCat("slot order names '", s, "' twice"));
    }
  }
  program.slots_ = std::move(slot_order);
  program.num_atoms_ = atoms.size();
  GuardCompiler compiler(&program);
  for (size_t i = 0; i < atoms.size(); ++i) {
    if (absl::Status s = compiler.CompileAtom(atoms[i], i); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("guard atom ", i, " (", atoms[i].ToString(), "): ", s.message()));
    }
  }
  return program;
}

std::optional<size_t> GuardProgram::SlotOf(absl::string_view symbol) const {
  auto it = std::find(slots_.begin(), slots_.end(), symbol);
  if (it == slots_.end()) return std::nullopt;
  return static_cast<size_t>(it - slots_.begin());
}

GuardVerdict GuardProgram::Evaluate(absl::Span<const int64_t> slot_values) const {
  if (slot_values.size() != slots_.size()) return {false, num_atoms_};
  // Registers need no initialization: every register is written before it
  // is read. A plain stack array avoids even zeroing them.
  int64_t inline_registers[kInlineRegisters];
  std::vector<int64_t> heap_registers;
  int64_t* r = inline_registers;
  if (num_registers_ > kInlineRegisters) {
    heap_registers.resize(num_registers_);
    r = heap_registers.data();
  }
  bool failed = false;  // an overflow or division by zero so far: the next check fails
  for (const Instr& in : code_) {
    switch (in.op) {
      case Op::kLoadSlot:
        r[in.dst] = slot_values[in.a];
        break;
      case Op::kConst:
        r[in.dst] = in.imm;
        break;
      case Op::kAdd:
        failed |= __builtin_add_overflow(r[in.a], r[in.b], &r[in.dst]);
        break;
      case Op::kMul:
        failed |= __builtin_mul_overflow(r[in.a], r[in.b], &r[in.dst]);
        break;
      case Op::kFloorDiv: {
        const int64_t a = r[in.a], b = r[in.b];
        if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) {
          failed = true;
          r[in.dst] = 0;
        } else {
          r[in.dst] = FloorDivInt(a, b);
        }
        break;
      }
      case Op::kMod: {
        const int64_t b = r[in.b];
        if (b == 0) {
          failed = true;
          r[in.dst] = 0;
        } else {
          r[in.dst] = FloorModInt(r[in.a], b);
        }
        break;
      }
      case Op::kMin:
        r[in.dst] = std::min(r[in.a], r[in.b]);
        break;
      case Op::kMax:
        r[in.dst] = std::max(r[in.a], r[in.b]);
        break;
      case Op::kEq:
        r[in.dst] = r[in.a] == r[in.b];
        break;
      case Op::kNe:
        r[in.dst] = r[in.a] != r[in.b];
        break;
      case Op::kLt:
        r[in.dst] = r[in.a] < r[in.b];
        break;
      case Op::kLe:
        r[in.dst] = r[in.a] <= r[in.b];
        break;
      case Op::kDivisible:
        r[in.dst] = FloorModInt(r[in.a], in.imm) == 0;  // imm != 0 by construction
        break;
      case Op::kAnd:
        r[in.dst] = r[in.a] & r[in.b];
        break;
      case Op::kOr:
        r[in.dst] = r[in.a] | r[in.b];
        break;
      case Op::kNot:
        r[in.dst] = !r[in.a];
        break;
      case Op::kCheck:
        if (failed || r[in.a] == 0) return {false, static_cast<size_t>(in.imm)};
        break;
      case Op::kAddImm:
        failed |= __builtin_add_overflow(r[in.a], in.imm, &r[in.dst]);
        break;
      case Op::kMulImm:
        failed |= __builtin_mul_overflow(r[in.a], in.imm, &r[in.dst]);
        break;
      case Op::kFloorDivImm:
        if (in.imm == -1 && r[in.a] == std::numeric_limits<int64_t>::min()) {
          failed = true;
          r[in.dst] = 0;
        } else {
          r[in.dst] = FloorDivInt(r[in.a], in.imm);
        }
        break;
      case Op::kModImm:
        r[in.dst] = FloorModInt(r[in.a], in.imm);
        break;
      case Op::kEqImm:
        r[in.dst] = r[in.a] == in.imm;
        break;
      case Op::kNeImm:
        r[in.dst] = r[in.a] != in.imm;
        break;
      case Op::kLtImm:
        r[in.dst] = r[in.a] < in.imm;
        break;
      case Op::kLeImm:
        r[in.dst] = r[in.a] <= in.imm;
        break;
      case Op::kGtImm:
        r[in.dst] = r[in.a] > in.imm;
        break;
      case Op::kGeImm:
        r[in.dst] = r[in.a] >= in.imm;
        break;
      case Op::kCheckEqImm:
        if (failed || !(r[in.a] == in.imm)) return {false, in.dst};
        break;
      case Op::kCheckNeImm:
        if (failed || !(r[in.a] != in.imm)) return {false, in.dst};
        break;
      case Op::kCheckLtImm:
        if (failed || !(r[in.a] < in.imm)) return {false, in.dst};
        break;
      case Op::kCheckLeImm:
        if (failed || !(r[in.a] <= in.imm)) return {false, in.dst};
        break;
      case Op::kCheckGtImm:
        if (failed || !(r[in.a] > in.imm)) return {false, in.dst};
        break;
      case Op::kCheckGeImm:
        if (failed || !(r[in.a] >= in.imm)) return {false, in.dst};
        break;
      case Op::kCheckDivisible:
        if (failed || FloorModInt(r[in.a], in.imm) != 0) return {false, in.dst};
        break;
    }
  }
  return {true, 0};
}

std::string GuardProgram::Disassemble() const {
  static constexpr const char* kNames[] = {
      "load", "const", "add", "mul", "floordiv", "mod", "min", "max", "eq", "ne", "lt", "le",
      "divisible", "and", "or", "not", "check", "add", "mul", "floordiv", "mod", "eq", "ne", "lt",
      "le", "gt", "ge", "check eq", "check ne", "check lt", "check le", "check gt", "check ge",
      "check divisible"};
  static_assert(std::size(kNames) == static_cast<size_t>(Op::kCheckDivisible) + 1);
  std::string out;
  for (const Instr& in : code_) {
    const char* name = kNames[static_cast<int>(in.op)];
    switch (in.op) {
      case Op::kLoadSlot:
        absl::StrAppend(&out, "r", in.dst, " = load ", slots_[in.a], "\n");
        break;
      case Op::kConst:
        absl::StrAppend(&out, "r", in.dst, " = const ", in.imm, "\n");
        break;
      case Op::kDivisible:
      case Op::kAddImm:
      case Op::kMulImm:
      case Op::kFloorDivImm:
      case Op::kModImm:
      case Op::kEqImm:
      case Op::kNeImm:
      case Op::kLtImm:
      case Op::kLeImm:
      case Op::kGtImm:
      case Op::kGeImm:
        absl::StrAppend(&out, "r", in.dst, " = ", name, " r", in.a, ", ", in.imm, "\n");
        break;
      case Op::kNot:
        absl::StrAppend(&out, "r", in.dst, " = not r", in.a, "\n");
        break;
      case Op::kCheck:
        absl::StrAppend(&out, "check r", in.a, " atom ", in.imm, "\n");
        break;
      case Op::kCheckEqImm:
      case Op::kCheckNeImm:
      case Op::kCheckLtImm:
      case Op::kCheckLeImm:
      case Op::kCheckGtImm:
      case Op::kCheckGeImm:
      case Op::kCheckDivisible:
        absl::StrAppend(&out, name, " r", in.a, ", ", in.imm, " atom ", in.dst, "\n");
        break;
      default:
        absl::StrAppend(&out, "r", in.dst, " = ", name, " r", in.a, ", r", in.b, "\n");
    }
  }
  return out;
}

}  // namespace shapeshift
