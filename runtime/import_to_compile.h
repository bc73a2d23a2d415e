// ImportOnnxFileToCompile: an ONNX file imported for a CPU compile that
// follows at once, with the pages its packed weights will need faulted in
// while it imports (codegen/cpu/packed_weights.h, ReservePackedPages).
//
// Why: fresh pages cost the kernel their zeroing when first written, and a
// compile's packing writes a copy of nearly every weight (GPT-2: 494 MB,
// ~0.5-0.8 s of one core here, the compile's end waiting on it). The
// weights a model file holds are known once it is parsed (OnnxFile::weights,
// each 1 MiB or more), before the import reads them: about that many bytes
// are reserved then, and a thread faults them in beside the import.
// The first compile's end gives back what no copy took; an import that fails
// gives it all back here.
#ifndef SHAPESHIFT_RUNTIME_IMPORT_TO_COMPILE_H_
#define SHAPESHIFT_RUNTIME_IMPORT_TO_COMPILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "runtime/compile_options.h"

namespace shapeshift::runtime {

// Whether a compile with `options` packs weight copies on the CPU.
bool CompilePacksWeights(const CompileOptions& options);

// ImportOnnxFile(path, import), reserving the pages for the packed copies
// when `packs` (CompilePacksWeights of the compile to follow).
absl::StatusOr<ImportedModel> ImportOnnxFileToCompile(const std::string& path, const ImportOptions& import,
                                                      bool packs);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_IMPORT_TO_COMPILE_H_
