#include "codegen/cpu/onednn_matmul.h"

#include <cstdlib>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace shapeshift::codegen::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& CpuEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

// The residual enters through dst (oneDNN's sum post-op adds dst's old value).
void CopyInParallel(const float* from, float* to, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) to[i] = from[i];
}

int64_t Dim(int64_t d) { return d == kRuntimeDim ? DNNL_RUNTIME_DIM_VAL : d; }

struct Layout {
  memory::dims a, b, c, bias;
  Tag a_tag, b_tag, c_tag;
};

// Descriptor dims for (batch, m, k, n); any may be DNNL_RUNTIME_DIM_VAL.
Layout MakeLayout(bool batched, bool transpose_b, int64_t batch, int64_t m, int64_t k, int64_t n) {
  Layout l;
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

}  // namespace

struct OnednnMatmul::Primitive {
  dnnl::matmul matmul;
  memory::desc packed_b;  // the primitive's layout of B, when config.pack_b
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
  if (c.pack_b) parts.push_back("packed_b");
  return absl::StrCat("matmul[", absl::StrJoin(parts, ", "), "]");
}

OnednnMatmul::OnednnMatmul(const MatmulConfig& config, std::unique_ptr<Primitive> primitive, std::string implementation)
    : config_(config), primitive_(std::move(primitive)), implementation_(std::move(implementation)) {}
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
  Layout l = MakeLayout(batched, config.transpose_b, Dim(config.batch), Dim(config.m), Dim(config.k), Dim(config.n));
  try {
    dnnl::primitive_attr attr;
    if (config.scale != 1.0f) attr.set_output_scales(0, {config.scale});
    dnnl::post_ops post_ops;
    auto primitive = std::make_unique<Primitive>();
    if (config.activation != MatmulActivation::kNone) {
      auto algorithm = config.activation == MatmulActivation::kGeluErf ? dnnl::algorithm::eltwise_gelu_erf
                                                                        : dnnl::algorithm::eltwise_gelu_tanh;
      post_ops.append_eltwise(1.0f, algorithm, 0.0f, 0.0f);
    }
    if (config.residual) post_ops.append_sum(1.0f);
    attr.set_post_ops(post_ops);
    memory::desc a = F32(l.a, l.a_tag), c = F32(l.c, l.c_tag);
    memory::desc b = F32(l.b, config.pack_b ? Tag::any : l.b_tag);
    dnnl::matmul::desc desc = config.bias ? dnnl::matmul::desc(a, b, F32(l.bias, l.a_tag), c)
                                          : dnnl::matmul::desc(a, b, c);
    dnnl::matmul::primitive_desc pd(desc, attr, CpuEngine());
    std::string implementation = pd.impl_info_str();
    if (config.pack_b) primitive->packed_b = pd.weights_desc();
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
  Layout l = MakeLayout(batched, cfg.transpose_b, shape.batch, shape.m, shape.k, shape.n);
  try {
    dnnl::engine& engine = CpuEngine();
    // oneDNN takes non-const handles; inputs are only read.
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(F32(l.a, l.a_tag), engine, const_cast<float*>(ops.a))},
        {DNNL_ARG_WEIGHTS, memory(cfg.pack_b ? primitive_->packed_b : F32(l.b, l.b_tag), engine,
                                  const_cast<float*>(ops.b))},
        {DNNL_ARG_DST, memory(F32(l.c, l.c_tag), engine, ops.c)},
    };
    if (cfg.bias) args.emplace(DNNL_ARG_BIAS, memory(F32(l.bias, l.a_tag), engine, const_cast<float*>(ops.bias)));
    if (cfg.residual && ops.residual != ops.c) CopyInParallel(ops.residual, ops.c, (batched ? shape.batch : 1) * shape.m * shape.n);
    dnnl::stream& stream = ThreadStream();
    primitive_->matmul.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(DescribeConfig(cfg), ": oneDNN failed: ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<PackedWeights> OnednnMatmul::PackB(const float* b) const {
  const MatmulConfig& cfg = config_;
  if (!cfg.pack_b) return absl::FailedPreconditionError(absl::StrCat(DescribeConfig(cfg), ": B is not packed"));
  if (!b) return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": missing B"));
  Layout l = MakeLayout(false, cfg.transpose_b, 1, 1, cfg.k, cfg.n);
  try {
    dnnl::engine& engine = CpuEngine();
    PackedWeights packed;
    packed.bytes_ = static_cast<int64_t>(primitive_->packed_b.get_size());
    // 64-byte alignment: oneDNN's kernels load whole cache lines.
    size_t rounded = (packed.bytes_ + 63) / 64 * 64;
    packed.data_ = std::shared_ptr<float>(static_cast<float*>(std::aligned_alloc(64, rounded)), std::free);
    if (!packed.data_) return absl::ResourceExhaustedError(absl::StrCat(DescribeConfig(cfg), ": out of memory"));
    memory plain(F32(l.b, l.b_tag), engine, const_cast<float*>(b));
    memory blocked(primitive_->packed_b, engine, packed.data_.get());
    dnnl::stream& stream = ThreadStream();
    dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
    stream.wait();
    return packed;
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(DescribeConfig(cfg), ": packing B failed: ", e.what()));
  }
}

}  // namespace shapeshift::codegen::cpu
