// What this host runs a long request's rows on when the weights are on disk
// (`run --weights-dir`, the default) or `--panel-long-rows` asks for the
// packed copy: the tests that check engines, given-back pages and tunings
// expect what the machine they run on does, on AVX-512 and AVX2 hosts alike.
//
// Both read the skinny GEMM's packed copy, so the plain weights' pages go
// back once packed (one resident copy), but with different engines
// (codegen/cpu/panel_rows_matmul.h): the AVX-512 core's panels are oneDNN's
// BA16a32b layout, which its blocked GEMM reads ("onednn-panels", and the
// skinny GEMM is tuned against it: runtime::LongRowsFor is the rule); on an
// AVX2 host oneDNN has no blocked kernel for the panels, so every row runs
// on the skinny GEMM ("skinny-avx2") and the tuning is the one against the
// runtime-M GEMM.
#ifndef SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_
#define SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/skinny_matmul.h"
#include "runtime/tuning/gemm_tuning.h"

namespace shapeshift::testing {

// What the skinny GEMM is tuned against in such a run: LongRows::kPanels on
// an AVX-512 host, kPlain elsewhere.
inline runtime::LongRows HostLongRowsOnPanelsRequest() {
  const std::optional<codegen::cpu::SkinnyMatmul::Isa> isa = codegen::cpu::SkinnyMatmul::HostIsa();
  return isa.has_value() ? runtime::LongRowsFor(/*long_rows_on_panels=*/true, *isa) : runtime::LongRows::kPlain;
}

// Whether the skinny GEMM is tuned against the panels' engine in such a run
// (a file's panel_gemms, "against onednn-panels"), else against the
// runtime-M GEMM's.
inline bool HostTunesAgainstPanels() { return HostLongRowsOnPanelsRequest() == runtime::LongRows::kPanels; }
// The name a tuning file gives that engine ("against ...").
inline std::string HostTunedAgainstOnPanelsRequest() { return runtime::LongRowsName(HostLongRowsOnPanelsRequest()); }

// The report's `long_engine` for such a run's skinny classes: "onednn-panels"
// on an AVX-512 host, "skinny-avx2" on an AVX2 one ("onednn" on a CPU with
// neither, which has no skinny GEMM).
inline std::string HostLongEngineOnPanelsRequest() {
  const std::optional<codegen::cpu::SkinnyMatmul::Isa> isa = codegen::cpu::SkinnyMatmul::HostIsa();
  if (!isa.has_value()) return runtime::LongRowsName(runtime::LongRows::kPlain);
  if (HostLongRowsOnPanelsRequest() == runtime::LongRows::kPanels) return runtime::LongRowsName(runtime::LongRows::kPanels);
  return absl::StrCat("skinny-", codegen::cpu::IsaName(*isa));
}

// Whether such a run gives the plain weights' pages back once packed: on
// every host with a skinny GEMM.
inline bool HostGivesPlainWeightsBack() { return codegen::cpu::SkinnyMatmul::HostIsa().has_value(); }

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_HOST_LONG_ROWS_H_
