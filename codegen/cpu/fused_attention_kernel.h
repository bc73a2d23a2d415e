// The instruction-set-specific cores of FusedAttention (fused_attention.h).
//
// Each core is the same algorithm (fused_attention_impl.h) compiled in its
// own translation unit with its own target flags (codegen/CMakeLists.txt):
// fused_attention_avx512.cc (-mavx512f -mfma), fused_attention_avx2.cc
// (-mavx2 -mfma) and the portable one in fused_attention.cc (the build's
// baseline flags, plain C++). fused_attention.cc validates the arguments,
// picks a core and splits the work items over the OpenMP team.
//
// Above the core's decode_max_q_len, a work item is one query tile of one
// (batch, head): item (b * heads + h) * tiles + t covers query rows
// [t * R, min(t * R + R, S)),
// R = TileRows(core, S). The tiling depends only on the core and S, never on
// the thread count, and one item's arithmetic (its summation order) depends
// only on the item, so the result is the same for every team size.
#ifndef SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_KERNEL_H_
#define SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_KERNEL_H_

#include <algorithm>
#include <cstdint>

#include "codegen/cpu/fused_attention.h"

namespace shapeshift::codegen::cpu::attention {

// A core's query tiling: a tile is up to max_row_vectors vectors of `lanes`
// query rows (the scores are held transposed, one vector over rows per key).
// Up to decode_max_q_len query rows the decode path runs instead (see
// UseDecode): measured single-threaded on Zen 5 over T = 128 and 1024,
// batch 1 and 8, the decode path is 4x (AVX-512) / 3x (AVX2) faster at
// q_len 1, 1.7x / 1.0x at 4, and 1.1-1.3x / 0.7x at 7; AVX-512 tiles win
// from 8 rows on.
struct CoreShape {
  int64_t lanes = 0;
  int64_t max_row_vectors = 0;
  int64_t decode_max_q_len = 0;
};

inline constexpr CoreShape kAvx512Shape{16, 4, 7};
inline constexpr CoreShape kAvx2Shape{8, 2, 4};
inline constexpr CoreShape kPortableShape{8, 2, 4};

// Query rows per tile: whole row vectors, as few as S needs, at most the
// core's maximum.
inline int64_t TileRows(CoreShape core, int64_t q_len) {
  const int64_t vectors = std::min(core.max_row_vectors, (q_len + core.lanes - 1) / core.lanes);
  return std::max<int64_t>(vectors, 1) * core.lanes;
}

inline int64_t TilesPerHead(CoreShape core, int64_t q_len) {
  const int64_t rows = TileRows(core, q_len);
  return (q_len + rows - 1) / rows;
}

// Runs work items [begin, end) of valid `args` on the calling thread.
void RunItemsAvx512(const AttentionArgs& args, int64_t begin, int64_t end);
void RunItemsAvx2(const AttentionArgs& args, int64_t begin, int64_t end);
void RunItemsPortable(const AttentionArgs& args, int64_t begin, int64_t end);

// Decode (few query rows): a work item is one (batch, run of
// heads_per_item query heads of one KV head), heads_per_item dividing the
// group heads / kv_heads; item (b * kv_heads + kvh) * parts + part, parts =
// group / heads_per_item. Each query row's arithmetic depends only on the
// row (not on the grouping or the thread count).
inline bool UseDecode(CoreShape core, const AttentionArgs& args) { return args.q_len <= core.decode_max_q_len; }

// `past` (or null): the PastCopy the items make (part 0 of each KV head).
void RunDecodeItemsAvx512(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                          int64_t end);
void RunDecodeItemsAvx2(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                        int64_t end);
void RunDecodeItemsPortable(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                            int64_t end);

}  // namespace shapeshift::codegen::cpu::attention

#endif  // SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_KERNEL_H_
