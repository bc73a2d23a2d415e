// GemmOp (gemm_plan.h) on cuBLASLt, for row-major operands with runtime
// dimensions. Never run on a GPU yet (see driver_device.cc).
//
// Row-major C[m,n] = A[m,k]·B[k,n] is, read column-major, C'(n x m) =
// B'(n x k)·A'(k x m): so cuBLASLt's "A" is our B and its "B" is our A, both
// untransposed (B stored [n,k] for transpose_b becomes op T), and the bias,
// one value per column of C, is one per row of C' — what cuBLASLt's bias
// epilogue broadcasts. Layouts and the algorithm are chosen per shape
// (cublasLtMatmulAlgoGetHeuristic) and cached; the descriptor is shared, so
// Run serializes setting its bias pointer and enqueueing (enqueueing is
// microseconds; the GEMM itself runs asynchronously on the stream).
#include <cstring>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cuda/driver_device.h"

namespace shapeshift::codegen::cuda::internal {
namespace {

struct ShapePlan {
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A), C/D
  cublasLtMatmulAlgo_t algo;
};

class CublasLtGemm : public DeviceGemm {
 public:
  CublasLtGemm(const DriverFunctions& driver, const CublasLtFunctions& lt, CUcontext context, const GemmOp& op)
      : driver_(driver), lt_(lt), context_(context), op_(op) {}
  ~CublasLtGemm() override {
    driver_.cuCtxSetCurrent(context_);
    for (auto& [shape, plan] : plans_) {
      lt_.cublasLtMatrixLayoutDestroy(plan.a);
      lt_.cublasLtMatrixLayoutDestroy(plan.b);
      lt_.cublasLtMatrixLayoutDestroy(plan.c);
    }
    if (preference_) lt_.cublasLtMatmulPreferenceDestroy(preference_);
    if (desc_) lt_.cublasLtMatmulDescDestroy(desc_);
    if (handle_) lt_.cublasLtDestroy(handle_);
  }

  absl::Status Init() {
    if (absl::Status s = Check(lt_.cublasLtCreate(&handle_), "cublasLtCreate"); !s.ok()) return s;
    cublasComputeType_t compute = op_.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (absl::Status s = Check(lt_.cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
        !s.ok()) {
      return s;
    }
    cublasOperation_t trans_a = op_.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t trans_b = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (op_.bias_epilogue && op_.gelu_tanh_epilogue) {
      epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    } else if (op_.bias_epilogue) {
      epilogue = CUBLASLT_EPILOGUE_BIAS;
    } else if (op_.gelu_tanh_epilogue) {
      epilogue = CUBLASLT_EPILOGUE_GELU;
    }
    cudaDataType_t bias_type = CUDA_R_32F;
    for (auto [attr, value, size] : {std::tuple{CUBLASLT_MATMUL_DESC_TRANSA, static_cast<const void*>(&trans_a), sizeof trans_a},
                                     std::tuple{CUBLASLT_MATMUL_DESC_TRANSB, static_cast<const void*>(&trans_b), sizeof trans_b},
                                     std::tuple{CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<const void*>(&epilogue), sizeof epilogue},
                                     std::tuple{CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<const void*>(&bias_type), sizeof bias_type}}) {
      if (absl::Status s = Check(lt_.cublasLtMatmulDescSetAttribute(desc_, attr, value, size), "cublasLtMatmulDescSetAttribute");
          !s.ok()) {
        return s;
      }
    }
    return Check(lt_.cublasLtMatmulPreferenceCreate(&preference_), "cublasLtMatmulPreferenceCreate");
  }

  absl::Status Run(const GemmShape& shape, const GemmOperands& ops, StreamHandle stream, DevicePtr workspace,
                   size_t workspace_bytes) override {
    int64_t batch = op_.batched ? shape.batch : 1;
    if (batch == 0 || shape.m == 0 || shape.n == 0) return absl::OkStatus();
    if (absl::Status s = CuStatus(driver_, driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    absl::StatusOr<const ShapePlan*> plan = PlanFor(batch, shape, workspace_bytes);
    if (!plan.ok()) return plan.status();
    void* bias = reinterpret_cast<void*>(ops.bias);
    if (op_.bias_epilogue) {
      if (absl::Status s = Check(lt_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                                    sizeof bias),
                                 "setting the bias pointer");
          !s.ok()) {
        return s;
      }
    }
    float alpha = op_.alpha;
    float beta = op_.residual_as_c ? 1.0f : 0.0f;
    const void* c = reinterpret_cast<const void*>(op_.residual_as_c ? ops.residual : ops.d);
    return Check(lt_.cublasLtMatmul(handle_, desc_, &alpha, reinterpret_cast<const void*>(ops.b), (*plan)->a,
                                    reinterpret_cast<const void*>(ops.a), (*plan)->b, &beta, c, (*plan)->c,
                                    reinterpret_cast<void*>(ops.d), (*plan)->c, &(*plan)->algo,
                                    reinterpret_cast<void*>(workspace), workspace_bytes,
                                    static_cast<cudaStream_t>(stream)),
                 absl::StrCat("cublasLtMatmul ", batch, "x", shape.m, "x", shape.k, "x", shape.n, " (", op_.Describe(),
                              ")"));
  }

 private:
  absl::StatusOr<const ShapePlan*> PlanFor(int64_t batch, const GemmShape& shape, size_t workspace_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto key = std::make_tuple(batch, shape.m, shape.k, shape.n);
    if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
    ShapePlan plan;
    const uint64_t m = shape.m, n = shape.n, k = shape.k;
    // Column-major views (see the file comment).
    uint64_t a_rows = op_.transpose_b ? k : n, a_cols = op_.transpose_b ? n : k;
    struct Layout {
      cublasLtMatrixLayout_t* out;
      uint64_t rows, cols;
      int64_t batch_stride;
    };
    for (Layout l : {Layout{&plan.a, a_rows, a_cols, static_cast<int64_t>(k * n)},
                     Layout{&plan.b, k, m, static_cast<int64_t>(m * k)},
                     Layout{&plan.c, n, m, static_cast<int64_t>(m * n)}}) {
      if (absl::Status s = Check(lt_.cublasLtMatrixLayoutCreate(l.out, CUDA_R_32F, l.rows, l.cols, l.rows),
                                 "cublasLtMatrixLayoutCreate");
          !s.ok()) {
        return s;
      }
      if (batch > 1) {
        int32_t count = static_cast<int32_t>(batch);
        lt_.cublasLtMatrixLayoutSetAttribute(*l.out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
        lt_.cublasLtMatrixLayoutSetAttribute(*l.out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &l.batch_stride,
                                             sizeof l.batch_stride);
      }
    }
    lt_.cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                             sizeof workspace_bytes);
    cublasLtMatmulHeuristicResult_t result;
    std::memset(&result, 0, sizeof result);
    int found = 0;
    absl::Status s = Check(lt_.cublasLtMatmulAlgoGetHeuristic(handle_, desc_, plan.a, plan.b, plan.c, plan.c,
                                                               preference_, 1, &result, &found),
                           "cublasLtMatmulAlgoGetHeuristic");
    if (s.ok() && found == 0) {
      s = absl::UnimplementedError(absl::StrCat("cuBLASLt has no algorithm for ", batch, "x", shape.m, "x", shape.k,
                                                "x", shape.n, " (", op_.Describe(), ")"));
    }
    if (!s.ok()) {
      lt_.cublasLtMatrixLayoutDestroy(plan.a);
      lt_.cublasLtMatrixLayoutDestroy(plan.b);
      lt_.cublasLtMatrixLayoutDestroy(plan.c);
      return s;
    }
    plan.algo = result.algo;
    return &(plans_[key] = plan);
  }

  absl::Status Check(cublasStatus_t r, const std::string& what) { return CublasStatus(lt_, r, what); }

  const DriverFunctions& driver_;
  const CublasLtFunctions& lt_;
  CUcontext context_;
  GemmOp op_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  absl::Mutex mu_;
  absl::flat_hash_map<std::tuple<int64_t, int64_t, int64_t, int64_t>, ShapePlan> plans_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceGemm>> CreateCublasLtGemm(const DriverFunctions& driver, CUcontext context,
                                                               const GemmOp& op) {
  absl::StatusOr<const CublasLtFunctions*> lt = CublasLt();
  if (!lt.ok()) return lt.status();
  auto gemm = std::make_unique<CublasLtGemm>(driver, **lt, context, op);
  if (absl::Status s = gemm->Init(); !s.ok()) return s;
  return gemm;
}

}  // namespace shapeshift::codegen::cuda::internal
