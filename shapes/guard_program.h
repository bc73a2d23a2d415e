// GuardProgram: a guard set compiled into a flat evaluator for dispatch.
//
// Every request checks its artifact's guards before running, so guard
// evaluation is on the hot path: interpreting Predicate trees (shared
// pointers, a hash map of symbol values, Status per node) costs microseconds.
// A GuardProgram is instead a flat bytecode over int64 registers — no
// allocation and no virtual call per atom, subexpressions shared across
// atoms computed once — reading symbol values from a slot array whose order
// is fixed at compile time (`slots()`), so the dispatcher binds input dims
// by index.
//
// Semantics are exactly Predicate::Evaluate's (floor division and modulo,
// see sym_expr.h), evaluated atom by atom in order; the result names the
// first failing atom. Fail closed: an atom whose evaluation overflows int64
// or divides by zero fails, like an atom that is false.
#ifndef SHAPESHIFT_SHAPES_GUARD_PROGRAM_H_
#define SHAPESHIFT_SHAPES_GUARD_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shapes/predicate.h"

namespace shapeshift {

struct GuardVerdict {
  bool pass = false;
  // Index of the first failing atom; num_atoms() when the input itself was
  // wrong (slot count mismatch). Meaningless when `pass`.
  size_t failed_atom = 0;
};

class GuardProgram {
 public:
  // Compiles a guard set (a conjunction: every atom must hold). Slots are the
  // atoms' symbols in sorted order.
  static absl::StatusOr<GuardProgram> Compile(absl::Span<const Predicate> atoms);
  // Same, with a caller-chosen slot order (e.g. the order input dims are
  // bound in). Every symbol of the atoms must be in `slot_order`.
  static absl::StatusOr<GuardProgram> Compile(absl::Span<const Predicate> atoms,
                                              std::vector<std::string> slot_order);

  // Symbol name of each slot, in slot order.
  const std::vector<std::string>& slots() const { return slots_; }
  std::optional<size_t> SlotOf(absl::string_view symbol) const;
  size_t num_atoms() const { return num_atoms_; }
  size_t num_instructions() const { return code_.size(); }

  // `slot_values[i]` is the value of slots()[i]. Thread-safe (const, no
  // shared scratch); allocation-free for programs of up to
  // kInlineRegisters registers.
  GuardVerdict Evaluate(absl::Span<const int64_t> slot_values) const;

  // One instruction per line, for debugging and tests.
  std::string Disassemble() const;

  static constexpr size_t kInlineRegisters = 256;

  enum class Op : uint8_t {
    kLoadSlot,  // r[dst] = slots[a]
    kConst,     // r[dst] = imm
    kAdd,       // r[dst] = r[a] + r[b]            (overflow: fail)
    kMul,       // r[dst] = r[a] * r[b]            (overflow: fail)
    kFloorDiv,  // r[dst] = floordiv(r[a], r[b])   (b == 0 or overflow: fail)
    kMod,       // r[dst] = mod(r[a], r[b])        (b == 0: fail)
    kMin,
    kMax,
    kEq,        // r[dst] = r[a] == r[b]
    kNe,
    kLt,
    kLe,
    kDivisible, // r[dst] = r[a] divisible by imm
    kAnd,       // r[dst] = r[a] & r[b]  (booleans are 0/1)
    kOr,
    kNot,       // r[dst] = !r[a]
    kCheck,     // atom imm fails unless r[a] != 0 and nothing failed so far
    // The same with a constant right operand in `imm` (most guard atoms
    // compare with or scale by a constant): one register read fewer.
    kAddImm,
    kMulImm,
    kFloorDivImm,  // imm != 0
    kModImm,       // imm != 0
    kEqImm,
    kNeImm,
    kLtImm,
    kLeImm,
    kGtImm,
    kGeImm,
    // A comparison with a constant fused with its check (the shape of most
    // guard atoms, `seq <= 128`, `seq % 16 == 0`): atom `dst` fails unless
    // the comparison of r[a] with imm holds and nothing failed so far.
    kCheckEqImm,
    kCheckNeImm,
    kCheckLtImm,
    kCheckLeImm,
    kCheckGtImm,
    kCheckGeImm,
    kCheckDivisible,
  };
  struct Instr {
    Op op;
    uint32_t dst = 0;
    uint32_t a = 0;
    uint32_t b = 0;
    int64_t imm = 0;
  };

 private:
  friend class GuardCompiler;
  std::vector<Instr> code_;
  std::vector<std::string> slots_;
  size_t num_registers_ = 0;
  size_t num_atoms_ = 0;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_GUARD_PROGRAM_H_
