// FusedAttention: argument checks, the choice of core, the split of the
// work items over the OpenMP team, and the portable core (the algorithm of
// fused_attention_impl.h over plain C++ arrays of 8 floats, compiled with the
// build's baseline flags; the compiler vectorizes what it can).
#include "codegen/cpu/fused_attention.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/fused_attention_impl.h"
#include "codegen/cpu/fused_attention_kernel.h"
#include "codegen/cpu/isa_limit.h"
#include "codegen/cpu/parallel_run.h"

namespace shapeshift::codegen::cpu {
namespace attention {
namespace {

// The operations of fused_attention_avx512.cc's Avx512, as loops.
struct Portable {
  static constexpr int kLanes = static_cast<int>(kPortableShape.lanes);
  static constexpr int kMaxRowVectors = static_cast<int>(kPortableShape.max_row_vectors);
  static constexpr int kAccumulators = 12;
  static constexpr int kPvRows = 4;
  static constexpr int kPvVecs = 2;
  struct V {
    float x[kLanes];
  };
  using Flags = V;  // 1 in a lane whose row saw a NaN or +inf score

  template <class F>
  static V Map(F f) {
    V out;
    for (int i = 0; i < kLanes; ++i) out.x[i] = f(i);
    return out;
  }
  static V Zero() { return Splat(0.0f); }
  static V Splat(float x) {
    return Map([x](int) { return x; });
  }
  static V Load(const float* p) {
    return Map([p](int i) { return p[i]; });
  }
  static V LoadU(const float* p) { return Load(p); }
  static V LoadPartial(const float* p, int n) {
    return Map([p, n](int i) { return i < n ? p[i] : 0.0f; });
  }
  static void Store(float* p, V v) {
    for (int i = 0; i < kLanes; ++i) p[i] = v.x[i];
  }
  static void Stream(float* p, V v) { Store(p, v); }
  static void Fence() {}
  static V Add(V a, V b) {
    return Map([&](int i) { return a.x[i] + b.x[i]; });
  }
  static V Sub(V a, V b) {
    return Map([&](int i) { return a.x[i] - b.x[i]; });
  }
  static V Mul(V a, V b) {
    return Map([&](int i) { return a.x[i] * b.x[i]; });
  }
  static V Fma(V a, V b, V c) {
    return Map([&](int i) { return a.x[i] * b.x[i] + c.x[i]; });
  }
  // x86's maxps: the second operand unless the first is greater.
  static V Max(V a, V b) {
    return Map([&](int i) { return a.x[i] > b.x[i] ? a.x[i] : b.x[i]; });
  }
  static V Pow2(V shifted, int32_t round_bits) {
    return Map([&](int i) {
      const int32_t n = std::bit_cast<int32_t>(shifted.x[i]) - round_bits;
      return std::bit_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(n + 127) << 23));
    });
  }
  static V ZeroBelow(V e, V x, float threshold) {
    return Map([&](int i) { return x.x[i] < threshold ? 0.0f : e.x[i]; });
  }
  static V NegInfToZero(V x) {
    return Map([&](int i) { return x.x[i] == -std::numeric_limits<float>::infinity() ? 0.0f : x.x[i]; });
  }
  static V SelectLanes(V in, V out, int lo, int hi) {
    return Map([&](int i) { return i >= lo && i < hi ? in.x[i] : out.x[i]; });
  }
  static Flags NoFlags() { return Zero(); }
  static Flags MarkBad(Flags f, V y) {
    return Map([&](int i) { return !(y.x[i] <= FLT_MAX) ? 1.0f : f.x[i]; });
  }
  static V FlagsToOnes(Flags f) { return f; }
  static V Gather(const float* base, int32_t stride, int valid) {
    return Map([&](int i) { return i < valid ? base[int64_t{i} * stride] : 0.0f; });
  }
  static V SumEach(const V* acc) {
    return Map([acc](int c) {
      float sum = 0.0f;
      for (int i = 0; i < kLanes; ++i) sum += acc[c].x[i];
      return sum;
    });
  }
  static float ReduceMax(V v) {
    float top = v.x[0];
    for (int i = 1; i < kLanes; ++i) top = v.x[i] > top ? v.x[i] : top;
    return top;
  }
  static float ReduceAdd(V v) {
    float sum = 0.0f;
    for (int i = 0; i < kLanes; ++i) sum += v.x[i];
    return sum;
  }
  static void Transpose(const float* src, int64_t stride, float* dst, int64_t dst_stride) {
    for (int r = 0; r < kLanes; ++r)
      for (int c = 0; c < kLanes; ++c) dst[c * dst_stride + r] = src[r * stride + c];
  }
};

void RunItemsPortableImpl(const AttentionArgs& args, int64_t begin, int64_t end) {
  RunItems<Portable>(args, begin, end);
}

void RunDecodeItemsPortableImpl(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item,
                                int64_t begin, int64_t end) {
  RunDecodeItems<Portable>(args, past, heads_per_item, begin, end);
}

}  // namespace

void RunItemsPortable(const AttentionArgs& args, int64_t begin, int64_t end) { RunItemsPortableImpl(args, begin, end); }
void RunDecodeItemsPortable(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                            int64_t end) {
  RunDecodeItemsPortableImpl(args, past, heads_per_item, begin, end);
}

}  // namespace attention

namespace {

// A core: its tiling and its two entry points (fused_attention_kernel.h).
struct Core {
  attention::CoreShape shape;
  void (*run)(const AttentionArgs&, int64_t, int64_t);
  void (*run_decode)(const AttentionArgs&, const PastCopy*, int64_t, int64_t, int64_t);
};

Core CoreOf(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::kAvx512:
      return {attention::kAvx512Shape, attention::RunItemsAvx512, attention::RunDecodeItemsAvx512};
    case AttentionIsa::kAvx2:
      return {attention::kAvx2Shape, attention::RunItemsAvx2, attention::RunDecodeItemsAvx2};
    case AttentionIsa::kPortable:
      break;
  }
  return {attention::kPortableShape, attention::RunItemsPortable, attention::RunDecodeItemsPortable};
}

// run(begin, end) over a static split of whole items [0, items) on `team`
// threads (the calling thread alone for a team of 1): an item's arithmetic
// does not depend on which thread runs it, so neither does the result.
template <class F>
void SplitItems(int team, int64_t items, F run) {
  if (team <= 1) return run(int64_t{0}, items);
#pragma omp parallel num_threads(team)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t begin = items * t / n, end = items * (t + 1) / n;
    if (begin < end) run(begin, end);
  }
}

bool IsaSupported(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::kAvx512:
      return Avx512FmaUsable();
    case AttentionIsa::kAvx2:
      return Avx2FmaUsable();
    case AttentionIsa::kPortable:
      return true;
  }
  return false;
}

// Whether a materialized mask (a row stride, column stride 1) holds the same
// T values in every query row of every (batch, head) it has: BERT exports
// expand a [b, 1, 1, T] padding mask to [b, 1, S, T]. Such a mask is the
// per-key mask of its first row exactly (the same bits, so the same y), and
// runs as that: no transposes. Compares bytes, stopping at the first
// difference (a causal or other per-row mask differs within a row or two);
// a uniform one is read once, 1/heads of what the tiles would read.
bool MaskRowsIdentical(const AttentionArgs& a) {
  const AttentionOperand& m = a.mask;
  const int64_t batches = m.batch_stride == 0 ? 1 : a.batch, heads = m.head_stride == 0 ? 1 : a.heads;
  const size_t bytes = static_cast<size_t>(a.kv_len) * sizeof(float);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* first = m.data + b * m.batch_stride + h * m.head_stride;
      for (int64_t i = 1; i < a.q_len; ++i) {
        if (std::memcmp(first + i * m.row_stride, first, bytes) != 0) return false;
      }
    }
  }
  return true;
}

// The PastCopy's fields against the attention's: INVALID_ARGUMENT naming
// the first bad one. Rows of an operand with data are read (its strides
// non-negative) and written into K or V (which must not broadcast them).
absl::Status CheckPastCopy(const AttentionArgs& a, const PastCopy& past) {
  if (past.rows < 0 || past.rows > a.kv_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("past copy: rows = ", past.rows, " is outside [0, kv_len = ", a.kv_len, "]"));
  }
  for (const auto& [name, from, to] : {std::tuple{"k", &past.k, &a.k}, std::tuple{"v", &past.v, &a.v}}) {
    if (from->data == nullptr || past.rows == 0 || a.batch == 0) continue;
    if (from->batch_stride < 0 || from->head_stride < 0 || from->row_stride < 0) {
      return absl::InvalidArgumentError(absl::StrCat("past copy: ", name, " has a negative stride"));
    }
    if (to->data == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("past copy: ", name, ".data is null, but rows are copied into it"));
    }
    if ((a.batch > 1 && to->batch_stride == 0) || (a.kv_heads > 1 && to->head_stride == 0) ||
        (past.rows > 1 && to->row_stride == 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("past copy: ", name, " is written, but its ", name, " broadcasts (a stride of 0)"));
    }
  }
  return absl::OkStatus();
}

// The PastCopy before the attention, for the paths that do not make it as
// they read: each (batch, KV head)'s rows, a (batch, KV head) per item.
void CopyPastFirst(const AttentionArgs& a, const PastCopy& past) {
  if (a.batch == 0 || past.rows == 0) return;
  const int64_t items = a.batch * a.kv_heads;
  const double floats = static_cast<double>(items) * past.rows * (a.head_dim + a.v_head_dim);
  auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / a.kv_heads, h = item % a.kv_heads;
      for (const auto& [from, to, d] : {std::tuple{&past.k, &a.k, a.head_dim}, std::tuple{&past.v, &a.v, a.v_head_dim}}) {
        if (from->data == nullptr) continue;
        const float* src = from->data + b * from->batch_stride + h * from->head_stride;
        float* dst = to->data + b * to->batch_stride + h * to->head_stride;
        for (int64_t j = 0; j < past.rows; ++j) std::copy_n(src + j * from->row_stride, d, dst + j * to->row_stride);
      }
    }
  };
  // (The attention's fork threshold, in floats copied rather than multiply-adds.)
  SplitItems(floats < static_cast<double>(kSerialGemmMacs) ? 1 : TeamFor(items), items, copy);
}

}  // namespace

AttentionIsa SelectedAttentionIsa() {
  if (IsaSupported(AttentionIsa::kAvx512)) return AttentionIsa::kAvx512;
  if (IsaSupported(AttentionIsa::kAvx2)) return AttentionIsa::kAvx2;
  return AttentionIsa::kPortable;
}

const char* AttentionIsaName(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::kAvx512:
      return "avx512";
    case AttentionIsa::kAvx2:
      return "avx2";
    case AttentionIsa::kPortable:
      return "portable";
  }
  return "unknown";
}

absl::Status RunFusedAttention(const AttentionArgs& args, const PastCopy* past) {
  return RunFusedAttentionOn(SelectedAttentionIsa(), args, past);
}

absl::Status RunFusedAttentionOn(AttentionIsa isa, const AttentionArgs& given, const PastCopy* past) {
  if (absl::Status s = CheckAttentionArgs(given); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("FusedAttention: ", s.message()));
  }
  if (past != nullptr) {
    if (absl::Status s = CheckPastCopy(given, *past); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("FusedAttention: ", s.message()));
    }
    if (past->rows == 0 || (past->k.data == nullptr && past->v.data == nullptr)) past = nullptr;
  }
  if (!IsaSupported(isa)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "FusedAttention: this CPU (or SHAPESHIFT_MAX_CPU_ISA) rules out the ", AttentionIsaName(isa), " core"));
  }
  // Only the decode path copies the past as it reads it.
  const Core core = CoreOf(isa);
  if (past != nullptr && (given.q_len == 0 || !attention::UseDecode(core.shape, given))) {
    CopyPastFirst(given, *past);
    past = nullptr;
  }
  if (given.batch == 0 || given.q_len == 0) return absl::OkStatus();
  if (given.kv_len == 0) {
    // No keys: each row's softmax is empty and P·V a sum over nothing, 0 in
    // the graph (not NaN: no score was -inf, there were none).
    for (int64_t b = 0; b < given.batch; ++b) {
      for (int64_t h = 0; h < given.heads; ++h) {
        for (int64_t i = 0; i < given.q_len; ++i) {
          float* row = given.out.data + b * given.out.batch_stride + h * given.out.head_stride + i * given.out.row_stride;
          std::fill(row, row + given.v_head_dim, 0.0f);
        }
      }
    }
    return absl::OkStatus();
  }
  AttentionArgs args = given;
  const attention::CoreShape shape = core.shape;

  // Multiply-adds, in double (no overflow): below kSerialGemmMacs a fork
  // costs more than a second thread saves.
  const double macs = static_cast<double>(args.batch) * args.heads * args.q_len * args.kv_len *
                      static_cast<double>(args.head_dim + args.v_head_dim);
  const bool serial = macs < static_cast<double>(kSerialGemmMacs);
  const bool decode = attention::UseDecode(shape, args);
  // (The decode path reads a full mask's rows contiguously already.)
  if (!decode && args.mask.data != nullptr && args.mask.row_stride != 0 && args.mask_col_stride == 1 &&
      MaskRowsIdentical(args)) {
    args.mask.row_stride = 0;
  }
  if (decode) {
    // One item per (batch, KV head): its query heads share the K and V
    // reads; per query head where that leaves threads idle (a row's result
    // does not depend on the grouping).
    const int64_t group = args.heads / args.kv_heads;
    const int team_max = serial ? 1 : TeamFor(args.batch * args.heads);
    const int64_t heads_per_item = args.batch * args.kv_heads >= team_max ? group : 1;
    const int64_t items = args.batch * args.heads / heads_per_item;
    SplitItems(serial ? 1 : TeamFor(items), items,
               [&](int64_t begin, int64_t end) { core.run_decode(args, past, heads_per_item, begin, end); });
    return absl::OkStatus();
  }

  const int64_t items = args.batch * args.heads * attention::TilesPerHead(shape, args.q_len);
  SplitItems(serial ? 1 : TeamFor(items), items, [&](int64_t begin, int64_t end) { core.run(args, begin, end); });
  return absl::OkStatus();
}

}  // namespace shapeshift::codegen::cpu
