// KV cache binding: how a caller keeps a decoder's past/present caches in
// its own buffers, so that a decode step appends its new positions in place
// instead of copying the whole cache into fresh `present` tensors.
//
// Why: under plain ONNX semantics every step reads `past_key_i` and returns
// `present_key_i = Concat(past_key_i, new, axis)`, a new tensor of the whole
// cache, so a step costs O(cache length) in copies. A Program finds each
// such pair (Program::kv_pairs()); a caller binds a pair's present output to
// a buffer with room for `capacity` positions on the concat axis whose
// first `past` positions hold the past, and passes a view of those
// positions (same address) as the past input. The step then writes only
// the new positions, and every reader of the present (the attention GEMMs)
// reads the buffer with its capacity as the batch stride. The same Program,
// the same kernels and GEMM primitives serve both forms, so bound and plain
// decoding agree bit for bit. runtime/kv_cache.h owns such buffers and grows
// them; this header is the contract.
#ifndef SHAPESHIFT_RUNTIME_KV_BINDING_H_
#define SHAPESHIFT_RUNTIME_KV_BINDING_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"

namespace shapeshift::runtime {

// One past/present pair of a compiled Program.
struct KvPairInfo {
  std::string input;   // the past input's name, e.g. "past_key_0"
  std::string output;  // the present output's name, e.g. "present_key_0"
  int input_index = -1;   // in graph-input order
  int output_index = -1;  // in graph-output order
  int64_t axis = 0;       // the positions axis (second-to-last)
  // Empty when the pair can be bound; else why not, naming the step that
  // reads or writes the cache in a way a strided buffer cannot serve.
  std::string why_not;
  // Unbound (plain ONNX semantics): true when the attention that reads the
  // present copies the past into it as it reads it (one pass over the past),
  // false when the Concat copies it and the readers read the copy.
  bool past_copied_by_attention = false;
  bool bindable() const { return why_not.empty(); }
};

// A caller-owned f32 buffer for one pair: the present's shape with
// `capacity` on the positions axis, row-major. The request's past input
// must be a view of its first `past` positions (data == buffer.data()) or
// have past == 0. After the request, positions [0, past + new) hold the
// present; the Program's result has an empty tensor (shape [0]) for the
// bound output.
struct BoundCache {
  std::string output;
  absl::Span<float> buffer;
  int64_t capacity = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_KV_BINDING_H_
