#include "runtime/tuning/gemm_tuner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/cpu/cache_sizes.h"
#include "codegen/cpu/panel_rows_matmul.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Restores the calling thread's OpenMP team size when the tuner returns.
class TeamScope {
 public:
  explicit TeamScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~TeamScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// Copy `c` of a class's weights into `b`: finite values (no FP slow path
// runs), different per copy; the values do not change the time.
const float* FillCopy(const cpu::MatmulConfig& config, size_t c, std::vector<float>& b) {
  b.resize(config.k * config.n);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 7 + c) % 13) * 0.01f;
  return b.data();
}

// One engine reading its own cold copies of the weights in turn.
class ColdEngine {
 public:
  virtual ~ColdEngine() = default;
  // Seconds for one call at `m` on the next copy.
  absl::StatusOr<double> Time(int64_t m) {
    const size_t copy = calls_++ % copies();
    const double start = Now();
    if (absl::Status s = Run(copy, m); !s.ok()) return s;
    return Now() - start;
  }

 protected:
  virtual size_t copies() const = 0;
  virtual absl::Status Run(size_t copy, int64_t m) = 0;

 private:
  size_t calls_ = 0;
};

// The operands every engine of one class shares: activations, bias, the
// residual (added in place, as a Program's fused residual is) and the output.
struct Operands {
  const cpu::MatmulConfig* config;
  std::vector<float> a, bias, out;
  cpu::MatmulOperands For(const float* b) {
    return {a.data(), b, config->bias ? bias.data() : nullptr, config->residual ? out.data() : nullptr, out.data()};
  }
};

// The packed copies do not depend on SkinnyOptions (only on the class and
// the core), so the prefetch candidates of one class share one set.
using PackedCopies = std::vector<cpu::PackedWeights>;

// One GEMM engine (`Matmul`: SkinnyMatmul, OnednnMatmul, PanelRowsMatmul)
// over its weight copies in turn; `packed` keeps packed copies alive (the
// plain ones are the caller's).
template <class Matmul>
class MatmulEngine final : public ColdEngine {
 public:
  MatmulEngine(std::unique_ptr<Matmul> matmul, std::vector<const float*> copies, Operands* operands,
               std::shared_ptr<const PackedCopies> packed = nullptr)
      : matmul_(std::move(matmul)), copies_(std::move(copies)), operands_(operands), packed_(std::move(packed)) {}
  const Matmul& matmul() const { return *matmul_; }
  const std::shared_ptr<const PackedCopies>& packed_copies() const { return packed_; }

 private:
  size_t copies() const override { return copies_.size(); }
  absl::Status Run(size_t copy, int64_t m) override {
    const cpu::MatmulConfig& c = *operands_->config;
    return matmul_->Execute({1, m, c.k, c.n}, operands_->For(copies_[copy]));
  }
  std::unique_ptr<Matmul> matmul_;
  std::vector<const float*> copies_;
  Operands* operands_;
  std::shared_ptr<const PackedCopies> packed_;
};

using SkinnyEngine = MatmulEngine<cpu::SkinnyMatmul>;

std::vector<const float*> DataOf(const PackedCopies& packed) {
  std::vector<const float*> data;
  for (const cpu::PackedWeights& w : packed) data.push_back(w.data());
  return data;
}

// The skinny GEMM. When `packed` is null, packs `copies` copies: `plain`'s
// where it holds them, else each filled in turn into one scratch matrix (no
// plain copies held: the panels' engine reads the packed ones). The engine's
// copies are available to the next candidate through packed_copies().
absl::StatusOr<std::unique_ptr<SkinnyEngine>> CreateSkinnyEngine(size_t copies,
                                                                 const std::vector<std::vector<float>>& plain,
                                                                 std::shared_ptr<const PackedCopies> packed,
                                                                 Operands* operands, cpu::SkinnyMatmul::Isa isa,
                                                                 const cpu::SkinnyOptions& options) {
  SS_ASSIGN_OR_RETURN(matmul, cpu::SkinnyMatmul::Create(*operands->config, isa, options));
  if (packed == nullptr) {
    auto fresh = std::make_shared<PackedCopies>();
    std::vector<float> scratch;
    for (size_t c = 0; c < copies; ++c) {
      const float* b = plain.empty() ? FillCopy(*operands->config, c, scratch) : plain[c].data();
      SS_ASSIGN_OR_RETURN(copy, matmul->PackB(b));
      fresh->push_back(std::move(copy));
    }
    packed = std::move(fresh);
  }
  std::vector<const float*> data = DataOf(*packed);
  return std::make_unique<SkinnyEngine>(std::move(matmul), std::move(data), operands, std::move(packed));
}

// oneDNN's runtime-M GEMM over the plain weights: what a Program runs for a
// request the skinny GEMM does not serve.
absl::StatusOr<std::unique_ptr<MatmulEngine<cpu::OnednnMatmul>>> CreateOnednnEngine(
    const std::vector<std::vector<float>>& plain, Operands* operands) {
  SS_ASSIGN_OR_RETURN(matmul, cpu::OnednnMatmul::Create(*operands->config));
  std::vector<const float*> data;
  for (const std::vector<float>& copy : plain) data.push_back(copy.data());
  return std::make_unique<MatmulEngine<cpu::OnednnMatmul>>(std::move(matmul), std::move(data), operands);
}

// oneDNN's blocked GEMM over the skinny GEMM's panels (the same packed
// copies): what a Program with long_rows_on_panels runs for a request the
// skinny GEMM does not serve.
absl::StatusOr<std::unique_ptr<MatmulEngine<cpu::PanelRowsMatmul>>> CreatePanelEngine(const SkinnyEngine& skinny,
                                                                                      Operands* operands) {
  SS_ASSIGN_OR_RETURN(panels, cpu::PanelRowsMatmul::Create(skinny.matmul()));
  return std::make_unique<MatmulEngine<cpu::PanelRowsMatmul>>(std::move(panels), DataOf(*skinny.packed_copies()),
                                                              operands, skinny.packed_copies());
}

// Medians of `engines` at `m`, interleaved call by call after one warm-up
// round (code generation at a new m is not a request's cost).
absl::StatusOr<std::vector<double>> Interleaved(const std::vector<ColdEngine*>& engines, int64_t m, int repeats) {
  std::vector<std::vector<double>> times(engines.size());
  for (int r = -1; r < repeats; ++r) {
    for (size_t e = 0; e < engines.size(); ++e) {
      SS_ASSIGN_OR_RETURN(t, engines[e]->Time(m));
      if (r >= 0) times[e].push_back(t);
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) medians.push_back(Median(std::move(t)));
  return medians;
}

absl::Status CheckOptions(const TunerOptions& o) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("tune: ", what)); };
  if (o.rows.empty()) return bad("the rows grid is empty");
  for (size_t i = 0; i < o.rows.size(); ++i) {
    if (o.rows[i] < 1 || o.rows[i] > 4096) return bad(absl::StrCat("rows value ", o.rows[i], " is outside 1..4096"));
    if (i > 0 && o.rows[i] <= o.rows[i - 1]) return bad("the rows grid is not ascending");
  }
  if (o.prefetch.empty()) return bad("the prefetch list is empty");
  for (int64_t p : o.prefetch) {
    if (p < 0 || p > 1024) return bad(absl::StrCat("prefetch value ", p, " is outside 0..1024"));
  }
  if (o.prefetch_at_rows < 1 || o.prefetch_at_rows > 4096) return bad("prefetch_at_rows is outside 1..4096");
  if (o.repeats < 1 || o.repeats > 1000) return bad(absl::StrCat("repeats ", o.repeats, " is outside 1..1000"));
  if (o.cold_bytes < 0 || o.cold_bytes > (int64_t{16} << 30)) return bad("cold_bytes is outside 0..16 GiB");
  if (o.budget_s < 0) return bad("the budget is negative");
  if (o.threads < 0) return bad("threads is negative");
  return absl::OkStatus();
}

// The sweep goes on past a lost point and stops after two in a row.
constexpr int kLossesInARowToStop = 2;

// Against the blocked GEMM over the panels: a request of fewer rows than its
// smallest chunk runs wholly on the skinny GEMM there too, so only the grid's
// points from that chunk up are measured; the skinny GEMM keeps every row
// count below it (skinny_max_rows at least the chunk - 1) and the points up
// to SkinnyRangeEnd's.
absl::StatusOr<GemmChoice> SweepAgainstPanels(SkinnyEngine& skinny, Operands* operands, const TunerOptions& o,
                                              GemmChoice choice) {
  SS_ASSIGN_OR_RETURN(panels, CreatePanelEngine(skinny, operands));
  const int64_t chunk = cpu::PanelRowsMatmul::kChunkRows.back();
  choice.skinny_min_rows = 1;
  int losses = 0;
  for (int64_t m : o.rows) {
    if (m < chunk) continue;
    SS_ASSIGN_OR_RETURN(t, Interleaved({&skinny, panels.get()}, m, o.repeats));
    choice.measured.push_back({m, t[0] * 1e6, t[1] * 1e6});
    losses = t[0] < t[1] ? 0 : losses + 1;
    if (losses == kLossesInARowToStop) break;
  }
  choice.skinny_max_rows = std::max(chunk - 1, SkinnyRangeEnd(choice.measured));
  return choice;
}

absl::StatusOr<GemmChoice> TuneOne(const cpu::MatmulConfig& config, const TunerOptions& o, int threads,
                                   int64_t& copy_bytes) {
  const int64_t plain_bytes = config.k * config.n * static_cast<int64_t>(sizeof(float));
  const size_t copies = static_cast<size_t>(std::max<int64_t>(2, (o.cold_bytes + plain_bytes - 1) / plain_bytes));
  // The plain copies only where oneDNN's runtime-M GEMM reads them.
  std::vector<std::vector<float>> plain(o.long_rows == LongRows::kPlain ? copies : 0);
  for (size_t c = 0; c < plain.size(); ++c) FillCopy(config, c, plain[c]);
  const int64_t max_m = std::max(o.rows.back(), o.prefetch_at_rows);
  Operands operands{&config, std::vector<float>(max_m * config.k, 0.01f), std::vector<float>(config.n, 0.1f),
                    std::vector<float>(max_m * config.n)};

  GemmChoice choice;
  choice.config = cpu::DescribeConfig(config);
  // The prefetch distance, skinny against skinny.
  std::vector<std::unique_ptr<SkinnyEngine>> candidates;
  std::vector<ColdEngine*> engines;
  std::shared_ptr<const PackedCopies> packed;
  for (int64_t p : o.prefetch) {
    SS_ASSIGN_OR_RETURN(e, CreateSkinnyEngine(copies, plain, packed, &operands, o.isa,
                                              {.threads = threads, .prefetch_rows = p}));
    if (packed == nullptr) {
      // Held from here to the class's end: the plain copies, the packed ones
      // and (without plain copies) the scratch they were packed from.
      copy_bytes = static_cast<int64_t>(plain.size()) * plain_bytes + (plain.empty() ? plain_bytes : 0);
      for (const cpu::PackedWeights& w : *e->packed_copies()) copy_bytes += w.bytes();
    }
    packed = e->packed_copies();
    engines.push_back(e.get());
    candidates.push_back(std::move(e));
  }
  SS_ASSIGN_OR_RETURN(by_prefetch, Interleaved(engines, o.prefetch_at_rows, o.repeats));
  const size_t best = std::min_element(by_prefetch.begin(), by_prefetch.end()) - by_prefetch.begin();
  choice.prefetch_rows = o.prefetch[best];
  std::unique_ptr<SkinnyEngine> skinny = std::move(candidates[best]);
  candidates.clear();

  if (o.long_rows == LongRows::kPanels) return SweepAgainstPanels(*skinny, &operands, o, std::move(choice));

  // The rows sweep, skinny against oneDNN.
  SS_ASSIGN_OR_RETURN(onednn, CreateOnednnEngine(plain, &operands));
  // The skinny GEMM's range starts at the first of the grid's first two
  // points it wins (oneDNN's gemv can win m = 1 alone) and ends at
  // SkinnyRangeEnd's point of those from the start on.
  size_t start = o.rows.size();
  int losses = 0;
  for (size_t i = 0; i < o.rows.size(); ++i) {
    const int64_t m = o.rows[i];
    SS_ASSIGN_OR_RETURN(t, Interleaved({skinny.get(), onednn.get()}, m, o.repeats));
    choice.measured.push_back({m, t[0] * 1e6, t[1] * 1e6});
    const bool won = t[0] < t[1];
    if (start == o.rows.size()) {
      if (won) start = i;
      if (!won && i >= 1) break;  // lost at both of the first two points
      continue;
    }
    losses = won ? 0 : losses + 1;
    if (losses == kLossesInARowToStop) break;
  }
  choice.skinny_min_rows = 1;
  choice.skinny_max_rows = 0;
  if (start < o.rows.size()) {
    choice.skinny_max_rows = SkinnyRangeEnd(absl::MakeConstSpan(choice.measured).subspan(start));
    if (choice.skinny_max_rows > 0) choice.skinny_min_rows = start == 0 ? 1 : o.rows[start];
  }
  return choice;
}

}  // namespace

int64_t SkinnyRangeEnd(absl::Span<const GemmTiming> points) {
  int64_t end = 0;
  double gain = 0, best = 0;
  for (const GemmTiming& p : points) {
    gain += p.onednn_us / p.skinny_us - 1;
    if (gain > best) best = gain, end = p.m;
  }
  return end;
}

int64_t DefaultColdBytes() {
  // The largest cache cpu0 reports (cpu/cache_sizes.h says why not sysconf).
  int64_t llc = 0;
  for (int level = 1; level <= 4; ++level) llc = std::max(llc, cpu::SysfsCacheBytes(level));
  if (llc <= 0) return int64_t{128} << 20;
  return std::clamp<int64_t>(int64_t{4} * llc, int64_t{64} << 20, int64_t{256} << 20);
}

absl::StatusOr<TuneReport> TuneGemms(absl::Span<const cpu::MatmulConfig> configs, const TunerOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (!cpu::SkinnyMatmul::Supported(options.isa)) {
    return absl::FailedPreconditionError(
        absl::StrCat("tune: this CPU cannot run the skinny GEMM's ", cpu::IsaName(options.isa), " core"));
  }
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  TeamScope team(threads);
  const double start = Now();
  TuneReport report;
  report.tuning.machine = HostMachineKey(options.isa, threads);
  for (const cpu::MatmulConfig& config : configs) {
    const std::string name = cpu::DescribeConfig(config);
    if (report.tuning.Choices(options.long_rows).count(name) != 0) continue;
    if (!cpu::SkinnyMatmul::Applies(config)) {
      report.inapplicable.push_back(name);
      continue;
    }
    if (options.budget_s > 0 && !report.tuning.Choices(options.long_rows).empty() && Now() - start > options.budget_s) {
      report.skipped.push_back(name);
      continue;
    }
    int64_t copy_bytes = 0;
    absl::StatusOr<GemmChoice> choice = TuneOne(config, options, threads, copy_bytes);
    report.peak_copy_bytes = std::max(report.peak_copy_bytes, copy_bytes);
    if (!choice.ok()) {
      return absl::Status(choice.status().code(), absl::StrCat("tune ", name, ": ", choice.status().message()));
    }
    if (options.on_choice) options.on_choice(*choice);
    report.tuning.Choices(options.long_rows).emplace(name, *std::move(choice));
  }
  report.seconds = Now() - start;
  return report;
}

}  // namespace shapeshift::runtime
