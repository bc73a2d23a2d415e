#include "codegen/attention_args.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen {
namespace {

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

absl::Status CheckOperand(const char* name, const AttentionOperand& op, bool output, const AttentionArgs& a,
                          int64_t heads, int64_t rows) {
  if (op.data == nullptr) return Invalid(absl::StrCat(name, ".data is null"));
  const struct {
    const char* field;
    int64_t stride, extent;
  } strides[] = {{"batch_stride", op.batch_stride, a.batch},
                 {"head_stride", op.head_stride, heads},
                 {"row_stride", op.row_stride, rows}};
  for (const auto& s : strides) {
    if (s.stride < 0) return Invalid(absl::StrCat(name, ".", s.field, " = ", s.stride, " is negative"));
    // Distinct outputs must not share memory: an output dim of extent > 1
    // cannot be broadcast.
    if (output && s.stride == 0 && s.extent > 1) {
      return Invalid(absl::StrCat(name, ".", s.field, " is 0 for an output dimension of ", s.extent));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckAttentionArgs(const AttentionArgs& a) {
  const struct {
    const char* field;
    int64_t value;
    bool may_be_empty;
  } sizes[] = {{"batch", a.batch, true},       {"heads", a.heads, false},         {"kv_heads", a.kv_heads, false},
               {"q_len", a.q_len, true},       {"kv_len", a.kv_len, true},        {"head_dim", a.head_dim, false},
               {"v_head_dim", a.v_head_dim, false}};
  for (const auto& s : sizes) {
    if (s.value < 0 || (s.value == 0 && !s.may_be_empty)) {
      return Invalid(absl::StrCat(s.field, " = ", s.value, " is not ", s.may_be_empty ? "non-negative" : "positive"));
    }
  }
  if (a.heads % a.kv_heads != 0) {
    return Invalid(absl::StrCat("kv_heads = ", a.kv_heads, " does not divide heads = ", a.heads));
  }
  if (a.mask_col_stride != 0 && a.mask_col_stride != 1) {
    return Invalid(absl::StrCat("mask_col_stride = ", a.mask_col_stride, " is neither 0 nor 1"));
  }
  if (a.window < 0) return Invalid(absl::StrCat("window = ", a.window, " is negative"));
  if (a.window > 0 && !a.causal) return Invalid(absl::StrCat("window = ", a.window, " without causal"));
  if (a.batch == 0 || a.q_len == 0) return absl::OkStatus();  // no output rows: nothing is read or written
  if (absl::Status s = CheckOperand("out", a.out, true, a, a.heads, a.q_len); !s.ok()) return s;
  if (a.kv_len == 0) return absl::OkStatus();  // zeros are written: nothing is read
  if (absl::Status s = CheckOperand("q", a.q, false, a, a.heads, a.q_len); !s.ok()) return s;
  if (absl::Status s = CheckOperand("k", a.k, false, a, a.kv_heads, a.kv_len); !s.ok()) return s;
  if (absl::Status s = CheckOperand("v", a.v, false, a, a.kv_heads, a.kv_len); !s.ok()) return s;
  if (a.mask.data != nullptr) {
    if (absl::Status s = CheckOperand("mask", a.mask, false, a, a.heads, a.q_len); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::codegen
