#include "codegen/cuda/attention_kernel.h"

#include <algorithm>
#include <bit>
#include <string>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cuda {
namespace {

int64_t TileRows(int64_t q_len) { return std::clamp<int64_t>(q_len, 1, kAttentionTileRows); }

}  // namespace

std::array<long long, kAttentionDimWords> AttentionDimWords(const AttentionArgs& a) {
  auto bits = [](float f) { return static_cast<long long>(std::bit_cast<uint32_t>(f)); };
  return {a.batch,
          a.heads,
          a.kv_heads,
          a.q_len,
          a.kv_len,
          a.head_dim,
          a.v_head_dim,
          a.q.batch_stride,
          a.q.head_stride,
          a.q.row_stride,
          a.k.batch_stride,
          a.k.head_stride,
          a.k.row_stride,
          a.v.batch_stride,
          a.v.head_stride,
          a.v.row_stride,
          a.out.batch_stride,
          a.out.head_stride,
          a.out.row_stride,
          a.mask.batch_stride,
          a.mask.head_stride,
          a.mask.row_stride,
          a.mask_col_stride,
          a.mask.data != nullptr ? 1 : 0,
          a.causal ? 1 : 0,
          a.window,
          bits(a.fill),
          bits(a.scale),
          a.nan_to_zero ? 1 : 0};
}

std::array<float*, 5> AttentionBuffers(const AttentionArgs& a) {
  return {a.q.data, a.k.data, a.v.data, a.mask.data, a.out.data};
}

int64_t AttentionItems(const AttentionArgs& a) {
  if (a.batch <= 0 || a.heads <= 0 || a.q_len <= 0) return 0;
  const int64_t rows = TileRows(a.q_len);
  return a.batch * a.heads * ((a.q_len + rows - 1) / rows);
}

absl::Status CheckCudaAttention(const AttentionArgs& a) {
  absl::Status s = CheckAttentionArgs(a);
  if (s.ok() && (a.head_dim > kAttentionMaxHeadDim || a.v_head_dim > kAttentionMaxHeadDim)) {
    s = absl::InvalidArgumentError(absl::StrCat("head dims ", a.head_dim, " and ", a.v_head_dim,
                                                " exceed the kernel's ", kAttentionMaxHeadDim));
  }
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("CUDA fused attention: ", s.message()));
}

CudaKernelSource AttentionKernel() {
  CudaKernelSource k;
  k.entry = kAttentionEntry;
  k.mapping = ThreadMapping::kBlockPerRow;
  k.work = SymExpr::Symbol("items");  // the launcher evaluates it natively (AttentionItems)
  k.row_length = kAttentionThreads;
  const std::string sizes = absl::StrCat("#define SS_ATT_ROWS ", kAttentionTileRows, "\n#define SS_ATT_KEYS ",
                                         kAttentionKeyChunk, "\n#define SS_ATT_DMAX ", kAttentionMaxHeadDim, "\n");
  k.function = sizes + R"(
// Fused attention: codegen/cuda/attention_kernel.h.
extern "C" __global__ void __launch_bounds__(256) ss_fused_attention(void* const* buffers, const long long* dims) {
  const float* __restrict__ q = (const float*)buffers[0];
  const float* __restrict__ k = (const float*)buffers[1];
  const float* __restrict__ v = (const float*)buffers[2];
  const float* __restrict__ mask = (const float*)buffers[3];
  float* __restrict__ out = (float*)buffers[4];
  const long long batch = dims[0], heads = dims[1], kv_heads = dims[2], S = dims[3], T = dims[4];
  const long long D = dims[5], DV = dims[6];
  const long long qb = dims[7], qh = dims[8], qr = dims[9];
  const long long kb = dims[10], kh = dims[11], kr = dims[12];
  const long long vb = dims[13], vh = dims[14], vr = dims[15];
  const long long ob = dims[16], oh = dims[17], orow = dims[18];
  const long long mb = dims[19], mh = dims[20], mr = dims[21], mc = dims[22];
  const long long has_mask = dims[23], causal = dims[24], window = dims[25];
  const float fill = __int_as_float((unsigned)dims[26]);
  const float scale = __int_as_float((unsigned)dims[27]);
  const long long nan_to_zero = dims[28];
  const float minus_inf = __int_as_float(0xff800000u);
  const float nan_row = nan_to_zero ? 0.0f : __int_as_float(0x7fc00000u);
  const long long group = kv_heads > 0 && heads >= kv_heads ? heads / kv_heads : 1;
  const long long R = S < SS_ATT_ROWS ? (S < 1 ? 1 : S) : SS_ATT_ROWS;
  const long long tiles = (S + R - 1) / R;
  const long long items = S > 0 ? batch * heads * tiles : 0;
  const long long offset = T - S;  // row i may see key j iff j - offset <= i (and > i - window)
  __shared__ float qs[SS_ATT_ROWS][SS_ATT_DMAX + 1];  // +1: rows in distinct banks
  __shared__ float os[SS_ATT_ROWS][SS_ATT_DMAX];
  __shared__ float ps[SS_ATT_ROWS][SS_ATT_KEYS + 1];
  __shared__ float row_max[SS_ATT_ROWS], row_sum[SS_ATT_ROWS], row_alpha[SS_ATT_ROWS];
  __shared__ float row_shift[SS_ATT_ROWS], row_bad[SS_ATT_ROWS];
  for (long long item = blockIdx.x; item < items; item += gridDim.x) {
    const long long t = item % tiles, bh = item / tiles, h = bh % heads, b = bh / heads;
    const long long i0 = t * R, rows = S - i0 < R ? S - i0 : R;
    const float* qp = q + b * qb + h * qh + i0 * qr;
    const float* kp = k + b * kb + (h / group) * kh;
    const float* vp = v + b * vb + (h / group) * vh;
    const float* mp = has_mask ? mask + b * mb + h * mh + i0 * mr : mask;
    float* op = out + b * ob + h * oh + i0 * orow;
    SS_THREADS {
      for (long long x = threadIdx.x; x < (T > 0 ? rows * D : 0); x += blockDim.x) {  // no keys: Q unread
        const long long r = x / D, d = x - r * D;
        qs[r][d] = qp[r * qr + d];
      }
      for (long long x = threadIdx.x; x < rows * DV; x += blockDim.x) {
        const long long r = x / DV;
        os[r][x - r * DV] = 0.0f;
      }
      for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
        row_max[r] = minus_inf;
        row_sum[r] = 0.0f;
        row_bad[r] = 0.0f;
      }
    }
    SS_SYNC
    for (long long j0 = 0; j0 < T; j0 += SS_ATT_KEYS) {
      const long long keys = T - j0 < SS_ATT_KEYS ? T - j0 : SS_ATT_KEYS;
      // 1. Scores: y = scale * q.k + mask (or + fill outside the causal band).
      SS_THREADS {
        for (long long x = threadIdx.x; x < rows * keys; x += blockDim.x) {
          const long long c = x / rows, r = x - c * rows;  // neighbouring threads share a key
          const long long i = i0 + r, j = j0 + c;
          const float* kj = kp + j * kr;
          float dot = 0.0f;
          for (long long d = 0; d < D; ++d) dot = fmaf(qs[r][d], kj[d], dot);
          const float xs = scale * dot;
          const bool allowed = !causal || (j - offset <= i && (window <= 0 || j - offset > i - window));
          ps[r][c] = !allowed ? xs + fill : has_mask ? xs + mp[r * mr + j * mc] : xs;
        }
      }
      SS_SYNC
      // 2. Per row: the running maximum, the rescale factor, the bad flag
      // (a NaN or +inf score). A row whose scores are all -inf so far
      // subtracts 0: its p are 0, not exp(-inf - -inf) = NaN.
      SS_THREADS {
        for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
          float top = minus_inf, bad = row_bad[r];
          for (long long c = 0; c < keys; ++c) {
            const float y = ps[r][c];
            if (!(y <= 3.402823466e38f)) bad = 1.0f;
            if (y > top) top = y;
          }
          const float old_max = row_max[r];
          const float new_max = top > old_max ? top : old_max;
          const float shift = new_max == minus_inf ? 0.0f : new_max;
          row_alpha[r] = expf(old_max - shift);
          row_shift[r] = shift;
          row_max[r] = new_max;
          row_bad[r] = bad;
        }
      }
      SS_SYNC
      // 3. p = exp(y - shift).
      SS_THREADS {
        for (long long x = threadIdx.x; x < rows * keys; x += blockDim.x) {
          const long long c = x / rows, r = x - c * rows;
          ps[r][c] = expf(ps[r][c] - row_shift[r]);
        }
      }
      SS_SYNC
      // 4. o = o * alpha + P.V (V's row j read in place), l = l * alpha + sum(p).
      SS_THREADS {
        for (long long x = threadIdx.x; x < rows * DV; x += blockDim.x) {
          const long long r = x / DV, e = x - r * DV;
          const float* ve = vp + j0 * vr + e;
          float acc = 0.0f;
          for (long long c = 0; c < keys; ++c) acc = fmaf(ps[r][c], ve[c * vr], acc);
          os[r][e] = fmaf(os[r][e], row_alpha[r], acc);
          if (e == 0) {
            float sum = 0.0f;
            for (long long c = 0; c < keys; ++c) sum += ps[r][c];
            row_sum[r] = fmaf(row_sum[r], row_alpha[r], sum);
          }
        }
      }
      SS_SYNC
    }
    // O = o / l, or the NaN row (0 with nan_to_zero).
    SS_THREADS {
      for (long long x = threadIdx.x; x < rows * DV; x += blockDim.x) {
        const long long r = x / DV, e = x - r * DV;
        const bool nan = row_bad[r] != 0.0f || row_max[r] == minus_inf;
        op[r * orow + e] = T == 0 ? 0.0f : nan ? nan_row : os[r][e] * (1.0f / row_sum[r]);
      }
    }
    SS_SYNC
  }
}
)";
  return k;
}

}  // namespace shapeshift::codegen::cuda
