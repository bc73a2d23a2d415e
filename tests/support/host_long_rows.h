// What this host runs a long request's rows on when the weights are on disk
// (`run --weights-dir`, the default) or `--panel-long-rows` asks for the
// packed copy: the tests that check engines, given-back pages and tunings
// expect what the machine they run on does, on AVX-512 and AVX2 hosts alike.
//
// Why it differs: the skinny GEMM's AVX-512 panels are oneDNN's BA16a32b
// layout, which its blocked GEMM reads, so long rows run there and the plain
// weights' pages go back once packed (one resident copy). runtime::LongRowsFor
// (the rule) takes the panels on AVX-512 hosts only; on an AVX2 host long
// rows read the plain weights with oneDNN's runtime-M GEMM, so those pages
// stay.
#ifndef SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_
#define SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_

#include <string>

#include "codegen/cpu/skinny_matmul.h"
#include "runtime/tuning/gemm_tuning.h"

namespace shapeshift::testing {

// LongRows::kPanels on an AVX-512 host, kPlain elsewhere.
inline runtime::LongRows HostLongRowsOnPanelsRequest() {
  const std::optional<codegen::cpu::SkinnyMatmul::Isa> isa = codegen::cpu::SkinnyMatmul::HostIsa();
  return isa.has_value() ? runtime::LongRowsFor(/*long_rows_on_panels=*/true, *isa) : runtime::LongRows::kPlain;
}

// The report's `long_engine` for such a run: "onednn-panels" or "onednn".
inline std::string HostLongEngineOnPanelsRequest() { return runtime::LongRowsName(HostLongRowsOnPanelsRequest()); }

// Whether such a run gives the plain weights' pages back once packed.
inline bool HostGivesPlainWeightsBack() { return HostLongRowsOnPanelsRequest() == runtime::LongRows::kPanels; }

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_
