#include "runtime/tuning/gemm_tuner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
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
// round (code generation at a new m is not a request's cost), over
// RepeatsPerPoint(the rounds' own time) rounds.
absl::StatusOr<std::vector<double>> Interleaved(const std::vector<ColdEngine*>& engines, int64_t m,
                                                const TunerOptions& o) {
  std::vector<std::vector<double>> times(engines.size());
  double spent = 0;
  for (int r = -1; r < o.repeats; ++r) {
    for (size_t e = 0; e < engines.size(); ++e) {
      SS_ASSIGN_OR_RETURN(t, engines[e]->Time(m));
      if (r >= 0) times[e].push_back(t), spent += t;
    }
    const int rounds = r + 1;
    if (rounds >= std::min(o.min_repeats, o.repeats) && spent >= o.point_s) break;
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) medians.push_back(Median(std::move(t)));
  return medians;
}

// The budget: a deadline every step is checked against before it starts.
class Deadline {
 public:
  explicit Deadline(double budget_s) : end_(budget_s > 0 ? Now() + budget_s : 0) {}
  // Whether a step predicted to take `seconds` may start: always without a
  // budget, and until the run's first point is measured (each run makes
  // progress, so a sweep longer than any one budget still ends).
  bool Allows(double seconds) const { return end_ == 0 || !progressed_ || Now() + seconds <= end_; }
  void Progressed() { progressed_ = true; }

 private:
  double end_;
  bool progressed_ = false;
};

// The seconds a point at `m` rows will take, from the class's last point
// (its medians, warm-up and rounds): the time scaled up by rows (never
// down: below the compute-bound rows a call costs its weights' reads).
double PredictedSeconds(const GemmTiming& last, int64_t m, const TunerOptions& o) {
  const double pair_s = (last.skinny_us + last.onednn_us) * 1e-6 * std::max(1.0, double(m) / double(last.m));
  return pair_s * (1 + RepeatsPerPoint(pair_s, o));
}

absl::Status CheckOptions(const TunerOptions& o) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("tune: ", what)); };
  if (o.rows.empty()) return bad("the rows grid is empty");
  for (size_t i = 0; i < o.rows.size(); ++i) {
    if (o.rows[i] < 1 || o.rows[i] > kMaxSkinnyRows) {
      return bad(absl::StrCat("rows value ", o.rows[i], " is outside 1..", kMaxSkinnyRows));
    }
    if (i > 0 && o.rows[i] <= o.rows[i - 1]) return bad("the rows grid is not ascending");
  }
  if (o.prefetch.empty()) return bad("the prefetch list is empty");
  for (int64_t p : o.prefetch) {
    if (p < 0 || p > 1024) return bad(absl::StrCat("prefetch value ", p, " is outside 0..1024"));
  }
  if (o.prefetch_at_rows < 1 || o.prefetch_at_rows > 4096) return bad("prefetch_at_rows is outside 1..4096");
  if (o.repeats < 1 || o.repeats > 1000) return bad(absl::StrCat("repeats ", o.repeats, " is outside 1..1000"));
  if (o.min_repeats < 1) return bad(absl::StrCat("min_repeats ", o.min_repeats, " is below 1"));
  if (!(o.point_s >= 0)) return bad("point_s is negative");
  if (o.cold_bytes < 0 || o.cold_bytes > (int64_t{16} << 30)) return bad("cold_bytes is outside 0..16 GiB");
  if (o.budget_s < 0) return bad("the budget is negative");
  if (o.threads < 0) return bad("threads is negative");
  return absl::OkStatus();
}

// The sweep goes on past a lost point and stops after two in a row.
constexpr int kLossesInARowToStop = 2;

// The rows sweep's rule, point by point, so that a sweep the budget cut
// goes on from its points in a later run. Against the runtime-M GEMM the
// skinny GEMM's range starts at the first of the grid's first two points it
// wins (oneDNN's gemv can win m = 1 alone) and the sweep ends when it loses
// both; it ends at SkinnyRangeEnd's point of those from the start on.
// Against the blocked GEMM over the panels only points from its smallest
// chunk up are measured (below it both run the skinny GEMM, which keeps
// every row count below the chunk). Either way the sweep stops after two
// losses in a row.
class RowsSweep {
 public:
  explicit RowsSweep(LongRows against) : against_(against) {}

  // The smallest row count measured: the panels' smallest chunk, or 1.
  int64_t first_rows() const {
    return against_ == LongRows::kPanels ? cpu::PanelRowsMatmul::kChunkRows.back() : 1;
  }
  // Adds the next point; false when the sweep ends with it.
  bool Add(const GemmTiming& t) {
    points_.push_back(t);
    const bool won = t.skinny_us < t.onednn_us;
    if (against_ == LongRows::kPlain && start_ == kNoStart) {
      if (won) start_ = points_.size() - 1;
      return won || points_.size() < 2;
    }
    losses_ = won ? 0 : losses_ + 1;
    return losses_ < kLossesInARowToStop;
  }
  // The range from the points so far; `whole_grid`: they run to the grid's
  // end (SkinnyRowsPastTheGrid).
  void Decide(GemmChoice& choice, bool whole_grid) const {
    choice.measured = points_;
    choice.skinny_min_rows = 1;
    if (against_ == LongRows::kPanels) {
      choice.skinny_max_rows = std::max(first_rows() - 1, SkinnyRangeEnd(points_));
    } else {
      choice.skinny_max_rows = 0;
      if (start_ == kNoStart) return;
      choice.skinny_max_rows = SkinnyRangeEnd(absl::MakeConstSpan(points_).subspan(start_));
      if (choice.skinny_max_rows > 0 && start_ > 0) choice.skinny_min_rows = points_[start_].m;
    }
    choice.skinny_max_rows = SkinnyRowsPastTheGrid(points_, choice.skinny_max_rows, whole_grid);
  }

 private:
  LongRows against_;
  std::vector<GemmTiming> points_;
  static constexpr size_t kNoStart = ~size_t{0};
  size_t start_ = kNoStart;  // (kPlain) the first point of the range, once won
  int losses_ = 0;
};

// The class's weights, plain and packed, and the operands its engines share.
struct ClassCopies {
  std::vector<std::vector<float>> plain;  // only where oneDNN's runtime-M GEMM reads them
  std::unique_ptr<Operands> operands;
  size_t copies = 0;
  int64_t plain_bytes = 0;  // one plain copy
};

ClassCopies MakeCopies(const cpu::MatmulConfig& config, const TunerOptions& o) {
  ClassCopies c;
  c.plain_bytes = config.k * config.n * static_cast<int64_t>(sizeof(float));
  c.copies = static_cast<size_t>(std::max<int64_t>(2, (o.cold_bytes + c.plain_bytes - 1) / c.plain_bytes));
  c.plain.resize(o.long_rows == LongRows::kPlain ? c.copies : 0);
  for (size_t i = 0; i < c.plain.size(); ++i) FillCopy(config, i, c.plain[i]);
  const int64_t max_m = std::max(o.rows.back(), o.prefetch_at_rows);
  c.operands = std::make_unique<Operands>(Operands{&config, std::vector<float>(max_m * config.k, 0.01f),
                                                   std::vector<float>(config.n, 0.1f),
                                                   std::vector<float>(max_m * config.n)});
  return c;
}

// The skinny GEMM at the fastest of o.prefetch's distances (at
// o.prefetch_at_rows, skinny against skinny), or at `resume`'s.
absl::StatusOr<std::unique_ptr<SkinnyEngine>> PickPrefetch(ClassCopies& c, const TunerOptions& o, int threads,
                                                           const GemmChoice* resume, int64_t& prefetch_rows,
                                                           int64_t& copy_bytes) {
  const std::vector<int64_t> candidates_rows = resume ? std::vector<int64_t>{resume->prefetch_rows} : o.prefetch;
  std::vector<std::unique_ptr<SkinnyEngine>> candidates;
  std::vector<ColdEngine*> engines;
  std::shared_ptr<const PackedCopies> packed;
  for (int64_t p : candidates_rows) {
    SS_ASSIGN_OR_RETURN(e, CreateSkinnyEngine(c.copies, c.plain, packed, c.operands.get(), o.isa,
                                              {.threads = threads, .prefetch_rows = p}));
    if (packed == nullptr) {
      // Held from here to the class's end: the plain copies, the packed ones
      // and (without plain copies) the scratch they were packed from.
      copy_bytes = static_cast<int64_t>(c.plain.size()) * c.plain_bytes + (c.plain.empty() ? c.plain_bytes : 0);
      for (const cpu::PackedWeights& w : *e->packed_copies()) copy_bytes += w.bytes();
    }
    packed = e->packed_copies();
    engines.push_back(e.get());
    candidates.push_back(std::move(e));
  }
  size_t best = 0;
  if (candidates.size() > 1) {
    SS_ASSIGN_OR_RETURN(by_prefetch, Interleaved(engines, o.prefetch_at_rows, o));
    best = std::min_element(by_prefetch.begin(), by_prefetch.end()) - by_prefetch.begin();
  }
  prefetch_rows = candidates_rows[best];
  return std::move(candidates[best]);
}

// One class: its prefetch distance, then its rows sweep against o.long_rows'
// engine, each point only if `deadline` allows it (else the choice comes back
// with resume_at_rows set). `resume`: the cut sweep an earlier run left.
absl::StatusOr<GemmChoice> TuneOne(const cpu::MatmulConfig& config, const TunerOptions& o, int threads,
                                   const GemmChoice* resume, Deadline& deadline, int64_t& copy_bytes) {
  ClassCopies copies = MakeCopies(config, o);
  Operands* operands = copies.operands.get();
  GemmChoice choice;
  choice.config = cpu::DescribeConfig(config);
  SS_ASSIGN_OR_RETURN(skinny, PickPrefetch(copies, o, threads, resume, choice.prefetch_rows, copy_bytes));
  std::unique_ptr<ColdEngine> other;
  if (o.long_rows == LongRows::kPanels) {
    SS_ASSIGN_OR_RETURN(panels, CreatePanelEngine(*skinny, operands));
    other = std::move(panels);
  } else {
    SS_ASSIGN_OR_RETURN(onednn, CreateOnednnEngine(copies.plain, operands));
    other = std::move(onednn);
  }

  RowsSweep sweep(o.long_rows);
  bool going = true;
  int64_t from = sweep.first_rows();
  if (resume) {
    for (const GemmTiming& t : resume->measured) going = going && sweep.Add(t);
    from = std::max(from, resume->resume_at_rows);
  }
  std::optional<GemmTiming> last;
  if (resume && !resume->measured.empty()) last = resume->measured.back();
  for (int64_t m : o.rows) {
    if (!going) break;
    if (m < from) continue;
    if (last && !deadline.Allows(PredictedSeconds(*last, m, o))) {
      choice.resume_at_rows = m;
      break;
    }
    SS_ASSIGN_OR_RETURN(t, Interleaved({skinny.get(), other.get()}, m, o));
    deadline.Progressed();
    last = GemmTiming{m, t[0] * 1e6, t[1] * 1e6};
    going = sweep.Add(*last);
  }
  sweep.Decide(choice, going && choice.complete());
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

int64_t SkinnyRowsPastTheGrid(absl::Span<const GemmTiming> points, int64_t range_end, bool whole_grid) {
  const size_t n = points.size();
  auto won = [&](size_t i) { return points[i].skinny_us < points[i].onednn_us; };
  if (!whole_grid || n < 2 || !won(n - 1) || !won(n - 2) || range_end != points.back().m) return range_end;
  return std::max(range_end, kMaxSkinnyRows);
}

int RepeatsPerPoint(double round_s, const TunerOptions& o) {
  const int least = std::min(o.min_repeats, o.repeats);
  const double enough = round_s > 0 ? std::ceil(o.point_s / round_s) : o.repeats;
  return static_cast<int>(std::clamp<double>(enough, least, o.repeats));
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
  Deadline deadline(options.budget_s);
  TuneReport report;
  report.tuning.machine = HostMachineKey(options.isa, threads);
  for (const cpu::MatmulConfig& config : configs) {
    const std::string name = cpu::DescribeConfig(config);
    if (report.tuning.Choices(options.long_rows).count(name) != 0) continue;
    if (!cpu::SkinnyMatmul::Applies(config)) {
      report.inapplicable.push_back(name);
      continue;
    }
    if (!deadline.Allows(0)) {
      report.skipped.push_back(name);
      continue;
    }
    auto resumed = options.resume.find(name);
    const GemmChoice* resume =
        resumed == options.resume.end() || resumed->second.complete() ? nullptr : &resumed->second;
    int64_t copy_bytes = 0;
    absl::StatusOr<GemmChoice> choice = TuneOne(config, options, threads, resume, deadline, copy_bytes);
    report.peak_copy_bytes = std::max(report.peak_copy_bytes, copy_bytes);
    if (!choice.ok()) {
      return absl::Status(choice.status().code(), absl::StrCat("tune ", name, ": ", choice.status().message()));
    }
    if (!choice->complete()) report.cut.push_back(name);
    if (options.on_choice) options.on_choice(*choice);
    report.tuning.Choices(options.long_rows).emplace(name, *std::move(choice));
  }
  report.seconds = Now() - start;
  return report;
}

}  // namespace shapeshift::runtime
