// CompileOptions: what a user chooses when compiling a model — the declared
// ranges of its dynamic dims and the debugging hooks.
#ifndef SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_
#define SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "graph/onnx/importer.h"

namespace shapeshift::codegen::cpu {
class ObjectStore;
}  // namespace shapeshift::codegen::cpu

namespace shapeshift::runtime {

struct CompileOptions {
  // Dim name → declared inclusive range (`--dim seq=1..512`). For ONNX models
  // these are the importer's dim_param ranges; for built models they
  // override the ranges the builder declared. Unknown names are an error.
  std::map<std::string, DimRange> dims;
  // Pass names after which the graph / plan is printed (`--print-after`).
  std::vector<std::string> print_after;
  std::ostream* print_stream = nullptr;  // std::cerr when null
  // f32 lanes of generated vector loops; 0 = the widest the host has.
  int vector_width = 0;
  // Compiled kernels are looked up here before compiling and kept here
  // after (e.g. persist::ArtifactObjectStore for a cache directory); not
  // owned, may be null. ProgramStats say how many kernels came from it.
  codegen::cpu::ObjectStore* object_store = nullptr;
  // GEMMs with constant weights also get static-M primitives over a packed
  // copy of the weights for short requests (codegen/cpu/small_rows_matmul.h):
  // faster for 4..32 rows, at the memory of a second copy of those weights.
  bool pack_small_row_gemms = true;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_
