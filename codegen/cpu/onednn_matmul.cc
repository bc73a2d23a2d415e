#include "codegen/cpu/onednn_matmul.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "codegen/cpu/isa_limit.h"
#include "codegen/cpu/parallel_run.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace shapeshift::codegen::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& CpuEngine() {
  static dnnl::engine* engine = [] {
    // Before oneDNN's first primitive, or the call has no effect
    // (isa_limit.h): the process's limit holds for oneDNN's kernels too.
    if (!Avx512Allowed()) dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

// Below this many floats (64 KiB) a copy runs on the calling thread: it
// takes a few microseconds, about what waking the OpenMP pool costs (the
// runtime's serial-kernel threshold, runtime/program_impl.h, is the same).
constexpr int64_t kSerialCopyElements = 16384;

// The residual enters through dst (oneDNN's sum post-op adds dst's old value).
void CopyResidual(const float* from, float* to, int64_t count) {
  if (count < kSerialCopyElements) {
    std::memcpy(to, from, count * sizeof(float));
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) to[i] = from[i];
}

// Limits this thread's OpenMP regions (oneDNN's included) to one thread for
// its lifetime; restores the previous limit.
class SingleThreadScope {
 public:
  explicit SingleThreadScope(bool active) : saved_(active ? omp_get_max_threads() : 0) {
    if (active) omp_set_num_threads(1);
  }
  ~SingleThreadScope() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  SingleThreadScope(const SingleThreadScope&) = delete;
  SingleThreadScope& operator=(const SingleThreadScope&) = delete;

 private:
  int saved_;
};

int64_t Dim(int64_t d) { return d == kRuntimeDim ? DNNL_RUNTIME_DIM_VAL : d; }

struct Layout {
  memory::dims a, b, c, bias;
  Tag a_tag, b_tag, c_tag;
  memory::dims b_strides;  // when B's batch stride is given: B's strides, else empty (b_tag)
};

// Descriptor dims for (batch, m, k, n); any may be DNNL_RUNTIME_DIM_VAL.
// `b_batch_stride` > 0 or DNNL_RUNTIME_DIM_VAL describes B by strides (its
// batch stride that, its rows dense); 0 by b_tag.
Layout MakeLayout(bool batched, bool transpose_b, int64_t batch, int64_t m, int64_t k, int64_t n,
                  int64_t b_batch_stride = 0) {
  Layout l;
  if (batched && b_batch_stride != 0) {
    // [batch, K, N] stored as is, or as [batch, N, K] with transpose_b.
    l.b_strides = transpose_b ? memory::dims{b_batch_stride, 1, k} : memory::dims{b_batch_stride, n, 1};
  }
  if (batched) {
    l.a = {batch, m, k};
    l.b = {batch, k, n};
    l.c = {batch, m, n};
    l.bias = {1, 1, n};
    l.a_tag = l.c_tag = Tag::abc;
    l.b_tag = transpose_b ? Tag::acb : Tag::abc;
  } else {
    l.a = {m, k};
    l.b = {k, n};
    l.c = {m, n};
    l.bias = {1, n};
    l.a_tag = l.c_tag = Tag::ab;
    l.b_tag = transpose_b ? Tag::ba : Tag::ab;
  }
  return l;
}

memory::desc F32(const memory::dims& dims, Tag tag) { return memory::desc(dims, memory::data_type::f32, tag); }
memory::desc BDesc(const Layout& l) {
  return l.b_strides.empty() ? F32(l.b, l.b_tag) : memory::desc(l.b, memory::data_type::f32, l.b_strides);
}

}  // namespace

struct OnednnMatmul::Primitive {
  dnnl::matmul matmul;
  memory::desc packed_b;    // the primitive's layout of B, when config.pack_b
  memory::desc scratchpad;  // user-managed (see the header); size 0 when none
};

namespace {

// The calling thread's scratchpad, at least `bytes` long (64-byte aligned:
// oneDNN's kernels load whole cache lines). It grows and is never shared:
// Execute() is synchronous, so one thread is inside at most one at a time.
absl::StatusOr<void*> ThreadScratchpad(size_t bytes) {
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  thread_local Buffer buffer;
  if (buffer.bytes < bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    buffer.data.reset(std::aligned_alloc(64, rounded));
    buffer.bytes = buffer.data ? rounded : 0;
    if (!buffer.data) return absl::ResourceExhaustedError(absl::StrCat("oneDNN scratchpad of ", bytes, " bytes"));
  }
  return buffer.data.get();
}

}  // namespace

// The argument memories of the last Execute(), kept for the next call of the
// same shape, which only re-points them (set_data_handle) at its operands:
// re-creating four descriptors, four dnnl::memory objects and the argument
// map cost more per call than the rest of Execute for small requests, and a
// model runs each primitive several times per request (once per layer) with
// one shape. A call that finds the cache busy (another thread is inside
// Execute on this primitive) builds its own arguments, as before.
namespace {

bool SameShape(const MatmulShape& x, const MatmulShape& y, bool batched) {
  return x.m == y.m && x.k == y.k && x.n == y.n &&
         (!batched || (x.batch == y.batch && x.b_batch_stride == y.b_batch_stride));
}

// oneDNN takes non-const handles; inputs are only read.
void* Handle(const float* p) { return const_cast<float*>(p); }

// oneDNN adds its bias argument before the output scale; scale * (A·B) +
// bias needs the bias as the first post-op (a binary add) when scale != 1.
bool BiasIsPostOp(const MatmulConfig& cfg) { return cfg.bias && cfg.scale != 1.0f; }
int BiasArgument(const MatmulConfig& cfg) {
  return BiasIsPostOp(cfg) ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1) : DNNL_ARG_BIAS;
}

// `scratchpad` (the calling thread's, or null when the primitive needs none)
// is described by `scratchpad_desc`.
std::unordered_map<int, memory> MakeArguments(const MatmulConfig& cfg, const memory::desc& packed_b,
                                              const MatmulShape& shape, const MatmulOperands& ops,
                                              const memory::desc& scratchpad_desc, void* scratchpad) {
  const bool batched = cfg.batch != 0;
  Layout l = MakeLayout(batched, cfg.transpose_b, shape.batch, shape.m, shape.k, shape.n,
                        cfg.b_batch_stride ? shape.b_batch_stride : 0);
  dnnl::engine& engine = CpuEngine();
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(F32(l.a, l.a_tag), engine, Handle(ops.a))},
      {DNNL_ARG_WEIGHTS, memory(cfg.pack_b ? packed_b : BDesc(l), engine, Handle(ops.b))},
      {DNNL_ARG_DST, memory(F32(l.c, l.c_tag), engine, ops.c)},
  };
  if (cfg.bias) args.emplace(BiasArgument(cfg), memory(F32(l.bias, l.a_tag), engine, Handle(ops.bias)));
  if (scratchpad != nullptr) args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad_desc, engine, scratchpad));
  return args;
}

// Re-points cached arguments; set_data_handle only where the pointer changed
// (it also re-zeroes a blocked layout's padding, so an unchanged weight stays
// untouched).
void PointArguments(const MatmulConfig& cfg, const MatmulOperands& ops, void* scratchpad,
                    std::unordered_map<int, memory>& args) {
  auto point = [&](int arg, void* handle) {
    auto it = args.find(arg);
    if (it != args.end() && it->second.get_data_handle() != handle) it->second.set_data_handle(handle);
  };
  point(DNNL_ARG_SRC, Handle(ops.a));
  point(DNNL_ARG_WEIGHTS, Handle(ops.b));
  point(DNNL_ARG_DST, ops.c);
  point(BiasArgument(cfg), Handle(ops.bias));
  point(DNNL_ARG_SCRATCHPAD, scratchpad);
}

class UnlockAtExit {
 public:
  explicit UnlockAtExit(absl::Mutex* mu) : mu_(mu) {}
  ~UnlockAtExit() { mu_->Unlock(); }
  UnlockAtExit(const UnlockAtExit&) = delete;
  UnlockAtExit& operator=(const UnlockAtExit&) = delete;

 private:
  absl::Mutex* mu_;
};

}  // namespace

struct OnednnMatmul::CallCache {
  absl::Mutex mu;
  bool valid = false;
  MatmulShape shape;
  std::unordered_map<int, memory> args;
};

std::string DescribeConfig(const MatmulConfig& c) {
  auto dim = [](int64_t d) { return d == kRuntimeDim ? std::string("?") : absl::StrCat(d); };
  std::vector<std::string> parts;
  if (c.batch != 0) parts.push_back("batch=" + dim(c.batch));
  parts.push_back("m=" + dim(c.m));
  parts.push_back("k=" + dim(c.k));
  parts.push_back("n=" + dim(c.n));
  if (c.transpose_b) parts.push_back("transpose_b");
  if (c.scale != 1.0f) parts.push_back(absl::StrCat("scale=", c.scale));
  if (c.bias) parts.push_back("bias");
  if (c.activation == MatmulActivation::kGeluErf) parts.push_back("gelu_erf");
  if (c.activation == MatmulActivation::kGeluTanh) parts.push_back("gelu_tanh");
  if (c.residual) parts.push_back("residual");
  if (c.pack_b) parts.push_back(c.b_panel_width > 0 ? absl::StrCat("panels=", c.b_panel_width) : "packed_b");
  if (c.b_batch_stride) parts.push_back("b_batch_stride");
  return absl::StrCat("matmul[", absl::StrJoin(parts, ", "), "]");
}

std::string OnednnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrCat(v->major, ".", v->minor, ".", v->patch);
}

OnednnMatmul::OnednnMatmul(const MatmulConfig& config, std::unique_ptr<Primitive> primitive, std::string implementation)
    : config_(config),
      primitive_(std::move(primitive)),
      implementation_(std::move(implementation)),
      cache_(std::make_unique<CallCache>()) {}
OnednnMatmul::~OnednnMatmul() = default;

absl::StatusOr<std::unique_ptr<OnednnMatmul>> OnednnMatmul::Create(const MatmulConfig& config) {
  auto valid = [](int64_t d) { return d == kRuntimeDim || d > 0; };
  if (!valid(config.m) || !valid(config.k) || !valid(config.n) || !(config.batch == 0 || valid(config.batch))) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": dimensions must be positive or kRuntimeDim"));
  }
  bool batched = config.batch != 0;
  if (config.pack_b && (batched || config.k == kRuntimeDim || config.n == kRuntimeDim)) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": packed B needs static k and n and 2-D operands"));
  }
  if (config.b_panel_width != 0 && !(config.pack_b && (config.b_panel_width == 16 || config.b_panel_width == 32))) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": B's panel width must be 16 or 32, and B packed"));
  }
  if (config.b_batch_stride && !batched) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(config), ": a B batch stride needs batched operands"));
  }
  Layout l = MakeLayout(batched, config.transpose_b, Dim(config.batch), Dim(config.m), Dim(config.k), Dim(config.n),
                        config.b_batch_stride ? DNNL_RUNTIME_DIM_VAL : 0);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (config.scale != 1.0f) attr.set_output_scales(0, {config.scale});
    dnnl::post_ops post_ops;
    auto primitive = std::make_unique<Primitive>();
    if (BiasIsPostOp(config)) post_ops.append_binary(dnnl::algorithm::binary_add, F32(l.bias, l.a_tag));
    if (config.activation != MatmulActivation::kNone) {
      auto algorithm = config.activation == MatmulActivation::kGeluErf ? dnnl::algorithm::eltwise_gelu_erf
                                                                        : dnnl::algorithm::eltwise_gelu_tanh;
      post_ops.append_eltwise(1.0f, algorithm, 0.0f, 0.0f);
    }
    if (config.residual) post_ops.append_sum(1.0f);
    attr.set_post_ops(post_ops);
    memory::desc a = F32(l.a, l.a_tag), c = F32(l.c, l.c_tag);
    const Tag packed_tag = config.b_panel_width == 32   ? Tag::BA16a32b
                           : config.b_panel_width == 16 ? Tag::BA16a16b
                                                        : Tag::any;
    memory::desc b = config.pack_b ? F32(l.b, packed_tag) : BDesc(l);
    dnnl::matmul::desc desc = config.bias && !BiasIsPostOp(config) ? dnnl::matmul::desc(a, b, F32(l.bias, l.a_tag), c)
                                                                   : dnnl::matmul::desc(a, b, c);
    dnnl::matmul::primitive_desc pd(desc, attr, CpuEngine());
    std::string implementation = pd.impl_info_str();
    if (config.pack_b) primitive->packed_b = pd.weights_desc();
    primitive->scratchpad = pd.scratchpad_desc();
    primitive->matmul = dnnl::matmul(pd);
    return std::unique_ptr<OnednnMatmul>(new OnednnMatmul(config, std::move(primitive), std::move(implementation)));
  } catch (const dnnl::error& e) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(config), ": oneDNN refused it: ", e.what()));
  }
}

absl::Status OnednnMatmul::Execute(const MatmulShape& shape, const MatmulOperands& ops) const {
  const MatmulConfig& cfg = config_;
  bool batched = cfg.batch != 0;
  auto fits = [](int64_t configured, int64_t actual) {
    return actual > 0 && (configured == kRuntimeDim || configured == actual);
  };
  if (!fits(cfg.m, shape.m) || !fits(cfg.k, shape.k) || !fits(cfg.n, shape.n) ||
      (batched && !fits(cfg.batch, shape.batch))) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": cannot run with batch=", shape.batch,
                                                   " m=", shape.m, " k=", shape.k, " n=", shape.n));
  }
  if (!ops.a || !ops.b || !ops.c || (cfg.bias && !ops.bias) || (cfg.residual && !ops.residual)) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": missing operand pointer"));
  }
  const int64_t batch = batched ? shape.batch : 1;
  if (cfg.b_batch_stride && shape.b_batch_stride < shape.k * shape.n) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": B batch stride ", shape.b_batch_stride,
                                                   " is below k*n = ", shape.k * shape.n));
  }
  try {
    if (cfg.residual && ops.residual != ops.c) CopyResidual(ops.residual, ops.c, batch * shape.m * shape.n);
    SingleThreadScope serial(batch * shape.m * shape.k * shape.n < kSerialGemmMacs);
    dnnl::stream& stream = ThreadStream();
    const memory::desc& scratchpad_desc = primitive_->scratchpad;
    void* scratchpad = nullptr;
    if (size_t bytes = scratchpad_desc.get_size(); bytes > 0) {
      absl::StatusOr<void*> buffer = ThreadScratchpad(bytes);
      if (!buffer.ok()) return absl::ResourceExhaustedError(absl::StrCat(DescribeConfig(cfg), ": ", buffer.status().message()));
      scratchpad = *buffer;
    }
    if (cache_->mu.TryLock()) {
      UnlockAtExit unlock(&cache_->mu);  // on every path out, exceptions included
      if (!cache_->valid || !SameShape(cache_->shape, shape, batched)) {
        cache_->valid = false;
        cache_->args = MakeArguments(cfg, primitive_->packed_b, shape, ops, scratchpad_desc, scratchpad);
        cache_->shape = shape;
        cache_->valid = true;
      } else {
        PointArguments(cfg, ops, scratchpad, cache_->args);
      }
      primitive_->matmul.execute(stream, cache_->args);
      stream.wait();
    } else {
      primitive_->matmul.execute(stream, MakeArguments(cfg, primitive_->packed_b, shape, ops, scratchpad_desc, scratchpad));
      stream.wait();
    }
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(DescribeConfig(cfg), ": oneDNN failed: ", e.what()));
  }
  return absl::OkStatus();
}

int64_t OnednnMatmul::scratchpad_bytes() const { return static_cast<int64_t>(primitive_->scratchpad.get_size()); }

bool OnednnMatmul::SamePackedLayout(const OnednnMatmul& other) const {
  return config_.pack_b && other.config_.pack_b && primitive_->packed_b == other.primitive_->packed_b;
}

absl::StatusOr<PackedWeights> OnednnMatmul::PackB(const float* b) const {
  const MatmulConfig& cfg = config_;
  if (!cfg.pack_b) return absl::FailedPreconditionError(absl::StrCat(DescribeConfig(cfg), ": B is not packed"));
  if (!b) return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": missing B"));
  Layout l = MakeLayout(false, cfg.transpose_b, 1, 1, cfg.k, cfg.n);
  try {
    dnnl::engine& engine = CpuEngine();
    // 64-byte aligned at least: oneDNN's kernels load whole cache lines.
    const auto packed_bytes = static_cast<int64_t>(primitive_->packed_b.get_size());
    SS_ASSIGN_OR_RETURN(packed, PackedWeights::Allocate(packed_bytes, DescribeConfig(cfg)));
    memory plain(F32(l.b, l.b_tag), engine, const_cast<float*>(b));
    memory blocked(primitive_->packed_b, engine, packed.writable());
    dnnl::stream& stream = ThreadStream();
    dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
    stream.wait();
    return packed;
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(DescribeConfig(cfg), ": packing B failed: ", e.what()));
  }
}

}  // namespace shapeshift::codegen::cpu
