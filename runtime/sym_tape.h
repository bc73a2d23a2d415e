// SymTape: the symbolic sizes a Program needs per request, compiled to a flat
// instruction list evaluated into one int64 array.
//
// Why: a request binds a handful of symbols (batch, seq, past) and then needs
// dozens of derived sizes — kernel dims, GEMM shapes, arena offsets, output
// shapes. SymExpr::Evaluate walks trees through a hash map per call; the tape
// is built once at compile time (shared subexpressions evaluated once, since
// SymExprs are interned) and evaluated with no allocation and no hashing, so
// size evaluation stays far below a microsecond.
//
// Slot layout: slots [0, num_symbols) are the bound symbols in the order of
// `symbols()`; every SymExpr added gets a slot (`Add` returns it). Evaluate
// writes all slots. Arithmetic follows SymExpr::Evaluate exactly: division
// by zero and int64 overflow (of a sum, a product or INT64_MIN // -1) are
// errors naming the expression being evaluated, never undefined behaviour
// or a wrapped size.
#ifndef SHAPESHIFT_RUNTIME_SYM_TAPE_H_
#define SHAPESHIFT_RUNTIME_SYM_TAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shapes/sym_expr.h"

namespace shapeshift::runtime {

class SymTape {
 public:
  // `symbols` are the free symbols every added expression may mention.
  explicit SymTape(std::vector<std::string> symbols);

  // The slot that will hold `expr`'s value; an error names a symbol that is
  // not one of `symbols()`.
  absl::StatusOr<int> Add(SymExpr expr);

  const std::vector<std::string>& symbols() const { return symbols_; }
  int num_slots() const { return num_slots_; }

  // `slots` has num_slots() entries; the first symbols().size() hold the
  // bound symbol values on entry. Fills the rest.
  absl::Status Evaluate(absl::Span<int64_t> slots) const;

 private:
  enum class Op : uint8_t { kConst, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };
  struct Instr {
    Op op;
    int dst;
    int a;
    int b;
    int64_t constant;
    int expr;  // index into exprs_: what an error names
  };
  absl::Status EvaluationError(const Instr& in, absl::string_view what) const;
  class Recorder;  // sym_tape.cc: Add's instructions for one node

  std::vector<std::string> symbols_;
  std::vector<SymExpr> exprs_;  // the expressions instructions compute, for messages
  absl::flat_hash_map<SymExpr, int> slot_of_;
  std::vector<Instr> instrs_;
  int num_slots_ = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SYM_TAPE_H_
