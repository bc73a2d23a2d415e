// Shared plumbing for the reference kernels: the kernel signature and
// registry, error helpers with one convention for "unsupported", input
// access, axis normalization, numpy broadcasting, and element-type dispatch.
//
// Why one convention for errors: the conformance runner (and users) must tell
// "we do not implement this" apart from "this is wrong". Every kernel reports
// an op feature or element type it does not implement as
// absl::StatusCode::kUnimplemented with a message starting "unsupported";
// everything else (bad rank, out-of-range index, ...) is InvalidArgument.
// Internal to graph/reference/; other code uses kernel.h.
#ifndef SHAPESHIFT_GRAPH_REFERENCE_KERNEL_UTIL_H_
#define SHAPESHIFT_GRAPH_REFERENCE_KERNEL_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/reference/kernel.h"

namespace shapeshift::reference {

using KernelResult = absl::StatusOr<std::vector<Tensor>>;
using KernelFn = KernelResult (*)(const KernelArgs&);

// How a kernel treats f16/bf16 inputs. Kernels that move bytes (Reshape,
// Gather, ...) or convert (Cast) handle them natively; kernels that compute
// on values are registered kViaF32: the dispatcher widens 16-bit inputs to
// f32, runs the kernel and rounds its f32 outputs back once.
enum class HalfPrecision { kNative, kViaF32 };

struct KernelEntry {
  KernelFn fn = nullptr;
  HalfPrecision halves = HalfPrecision::kNative;
};

// Op type → kernel. Each family file contributes with a Register* function
// (explicit calls, so a static library link never drops a family).
class KernelRegistry {
 public:
  void Add(const std::string& op_type, KernelFn fn,
           HalfPrecision halves = HalfPrecision::kNative) {
    kernels_[op_type] = {fn, halves};
  }
  const std::map<std::string, KernelEntry>& all() const { return kernels_; }

 private:
  std::map<std::string, KernelEntry> kernels_;
};

// The registered kernel of `op_type`, or nullptr. Only the op table
// (graph/op_table.cc) calls this: it is the table's reference column, and
// everything else finds a kernel through FindOp(op)->reference.
const KernelEntry* FindKernelEntry(absl::string_view op_type);

void RegisterElementwiseUnaryKernels(KernelRegistry& registry);
void RegisterElementwiseBinaryKernels(KernelRegistry& registry);
void RegisterReduceKernels(KernelRegistry& registry);
void RegisterMatMulKernels(KernelRegistry& registry);
void RegisterShapeKernels(KernelRegistry& registry);
void RegisterIndexingKernels(KernelRegistry& registry);
void RegisterGatherNDKernel(KernelRegistry& registry);
void RegisterScatterNDKernel(KernelRegistry& registry);
void RegisterGeneratorKernels(KernelRegistry& registry);
void RegisterCastKernels(KernelRegistry& registry);
void RegisterNormalizationKernels(KernelRegistry& registry);
void RegisterRotaryKernels(KernelRegistry& registry);

// --- errors -----------------------------------------------------------------
absl::Status Unsupported(absl::string_view what);  // kUnimplemented, "unsupported ..."
absl::Status UnsupportedDType(const KernelArgs& args, DType dtype, absl::string_view role = "input");
template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

std::string ShapeToString(const std::vector<int64_t>& shape);

// --- inputs -----------------------------------------------------------------
// The i-th input; an error if absent.
absl::StatusOr<const Tensor*> RequiredInput(const KernelArgs& args, int i);
// The i-th input, or nullptr when absent (omitted or empty name).
const Tensor* OptionalInput(const KernelArgs& args, int i);
// Integer tensor (i64/i32) elements as int64; `what` names it in errors.
absl::StatusOr<std::vector<int64_t>> ToInt64s(const Tensor& t, absl::string_view what);
// A one-element integer tensor's value.
absl::StatusOr<int64_t> ToScalarInt64(const Tensor& t, absl::string_view what);
// Requires every given input to have the dtype of the first.
absl::Status RequireSameDType(const KernelArgs& args, const std::vector<const Tensor*>& tensors);

// --- shapes -----------------------------------------------------------------
// Maps axis in [-rank, rank) to [0, rank).
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
// Normalizes and checks for duplicates.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank);
int64_t Product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = SIZE_MAX);
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);
// Multidirectional (numpy) broadcast of all shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<std::vector<int64_t>>& shapes);

// Walks an index space in row-major order and tracks, for each operand, a
// flat element offset given by per-dimension strides. Broadcasting is the
// case where an operand's stride is 0 on dimensions it broadcasts along;
// transposes and slices use permuted or scaled strides.
class IndexWalker {
 public:
  // `strides[k]` has one entry per dimension of `shape` for operand k;
  // `base[k]` (optional) is operand k's starting offset.
  IndexWalker(const std::vector<int64_t>& shape, std::vector<std::vector<int64_t>> strides,
              std::vector<int64_t> base = {});
  // Operands whose shapes each broadcast to `out_shape`.
  static IndexWalker Broadcast(const std::vector<int64_t>& out_shape,
                               const std::vector<std::vector<int64_t>>& operand_shapes);

  int64_t offset(size_t operand) const { return offsets_[operand]; }
  const std::vector<int64_t>& index() const { return index_; }
  void Next();

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> index_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> offsets_;
};

// --- element types ----------------------------------------------------------
// Bool tensors store one byte per element; kernels read them as uint8_t.
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) for the C++ type of `dtype` when it is one of the
// computable types (f32, f64, i64, i32, i8, u8, bool); f16/bf16 and anything
// else are "unsupported dtype" errors.
template <typename Fn>
absl::Status VisitComputable(const KernelArgs& args, DType dtype, Fn&& fn,
                             bool allow_bool = true) {
  switch (dtype) {
    case DType::kF32: return fn(TypeTag<float>{});
    case DType::kF64: return fn(TypeTag<double>{});
    case DType::kI64: return fn(TypeTag<int64_t>{});
    case DType::kI32: return fn(TypeTag<int32_t>{});
    case DType::kI8: return fn(TypeTag<int8_t>{});
    case DType::kU8: return fn(TypeTag<uint8_t>{});
    case DType::kBool:
      if (allow_bool) return fn(TypeTag<uint8_t>{});
      break;
    default: break;
  }
  return UnsupportedDType(args, dtype);
}

template <typename Fn>
absl::Status VisitNumeric(const KernelArgs& args, DType dtype, Fn&& fn) {
  return VisitComputable(args, dtype, std::forward<Fn>(fn), /*allow_bool=*/false);
}

template <typename Fn>
absl::Status VisitFloat(const KernelArgs& args, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32: return fn(TypeTag<float>{});
    case DType::kF64: return fn(TypeTag<double>{});
    default: return UnsupportedDType(args, dtype);
  }
}

// Allocates a zero-filled kernel output; fails for absurd sizes instead of
// crashing (the dispatcher adds the node name to the error).
absl::StatusOr<Tensor> NewOutput(DType dtype, const std::vector<int64_t>& shape);

}  // namespace shapeshift::reference

#endif  // SHAPESHIFT_GRAPH_REFERENCE_KERNEL_UTIL_H_
