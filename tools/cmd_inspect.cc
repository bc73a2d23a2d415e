// `shapeshift inspect MODEL.onnx [--dim name=lo..hi | name=a+b]... [--print-ir]
//                    [--weights-dir DIR | --weights-in-memory]`
//
// Shows what the importer sees: symbols and their ranges, inputs/outputs
// with symbolic shapes, the importer's notes (e.g. a dim narrowed to the
// range the model implies), the op histogram and every unsupported op; with
// --print-ir the whole graph with each value's symbolic type. Every name
// from the model is printed escaped (tools/terminal_text.h).
//
// Exit codes (the CLI's 0/1/2 rule, tools/command.h): 0 the model imports;
// 1 it is a valid ONNX model (the ONNX checker accepts it) that shapeshift
// cannot import as declared — unsupported ops or element types, shapes it
// cannot prove valid (a declared range wider than the model allows
// included); 2 bad usage (a --dim naming a dim the model does not have, or
// a range for one its metadata derives), an unreadable file or directory,
// or a model the ONNX checker rejects.
#include <cstdio>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/constant_spill.h"
#include "graph/onnx/exporter.h"
#include "graph/onnx/importer.h"
#include "graph/onnx/model_checker.h"
#include "graph/onnx/model_summary.h"
#include "graph/printer.h"
#include "onnx/onnx_pb.h"
#include "runtime/specialization/compile_tiers.h"
#include "tools/args.h"
#include "tools/check_report.h"
#include "tools/command.h"
#include "tools/run_cache_dir.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

constexpr char kUsage[] =
    "usage: shapeshift inspect MODEL.onnx [--dim name=lo..hi | name=a+b]... [--print-ir]\n"
    "                          [--weights-dir DIR | --weights-in-memory]\n"
    "  Prints the model's symbols with their ranges, inputs and outputs with symbolic shapes, the\n"
    "  importer's notes, the op histogram and every unsupported op; --print-ir adds the imported graph.\n"
    "  Then whether the default policy's first compile can lower every node (`check` for every tier).\n"
    "  Exit: 0 imports and compiles, 1 a valid ONNX model shapeshift cannot import (unsupported ops,\n"
    "  shapes it cannot prove valid) or compile (each node named), 2 bad usage, an unreadable file, or\n"
    "  a model the ONNX checker rejects.\n"
    "  As for `run`, large weights go to an unlinked file under DIR (default\n"
    "  $XDG_CACHE_HOME/shapeshift/weights); an external data file's are copied file to file, never read\n"
    "  into memory.\n";

int Fail(int code, absl::string_view message) { return ReportError("inspect", code, message); }

void PrintSummary(const ModelSummary& summary) {
  int total = 0;
  for (const auto& [op, count] : summary.op_histogram) total += count;
  std::printf("ops: %d nodes, %zu op types\n", total, summary.op_histogram.size());
  for (const auto& [op, count] : summary.op_histogram) std::printf("  %-24s %d\n", Escaped(op).c_str(), count);
  if (summary.unsupported.empty()) {
    std::printf("unsupported ops: none\n");
    return;
  }
  std::printf("unsupported ops: %zu\n", summary.unsupported.size());
  for (const UnsupportedOp& u : summary.unsupported) {
    std::printf("  %s (node '%s', opset %d)\n", Escaped(u.op_type).c_str(), Escaped(u.node).c_str(), u.opset);
  }
}

void PrintModel(const ImportedModel& model) {
  std::printf("opset: %d  ir_version: %lld  producer: %s\n", model.opset,
              static_cast<long long>(model.ir_version), model.producer.empty() ? "-" : Escaped(model.producer).c_str());
  std::printf("symbols:\n");
  for (const SymbolInfo& s : model.env->symbols()) {
    std::printf("  %s in [%lld, %lld]\n", Escaped(s.name).c_str(), static_cast<long long>(s.min),
                static_cast<long long>(s.max));
  }
  for (const DomainConstraint& c : model.env->domain_constraints()) {
    std::printf("  where %s\n", Escaped(c.predicate.ToString()).c_str());
  }
  std::printf("inputs:\n");
  for (const Value* v : model.graph->inputs()) std::printf("  %s\n", Escaped(PrintValueDecl(*v)).c_str());
  std::printf("outputs:\n");
  for (const Value* v : model.graph->outputs()) std::printf("  %s\n", Escaped(PrintValueDecl(*v)).c_str());
  std::printf("constants: %zu\n", model.graph->constants().size());
  // What the importer decided on the user's behalf (a dim narrowed to the
  // range the model implies, a relaxed check), each with its reason.
  std::printf("notes:%s\n", model.notes.empty() ? " none" : "");
  for (const std::string& note : model.notes) std::printf("  %s\n", Escaped(note).c_str());
}

// Whether the --dim flags name something the model lacks — a dim no input
// has, or a range for a dim its metadata derives as a sum — so that the
// import's failure is bad usage (2), not an answer about the model (1). The
// importer words the error; this only classifies it.
bool DimFlagNamesAreAtFault(const onnx::ModelProto& model, const ImportOptions& options) {
  absl::flat_hash_set<std::string> dims;
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      if (dim.has_dim_param()) dims.insert(dim.dim_param());
    }
  }
  absl::StatusOr<ImportOptions> recorded = ReadRecordedDims(model);
  for (const auto& [name, range] : options.dim_ranges) {
    if (!dims.contains(name) || (recorded.ok() && recorded->dim_sums.contains(name))) return true;
  }
  for (const auto& [name, terms] : options.dim_sums) {
    if (!dims.contains(name)) return true;
  }
  return false;
}

int RunInspect(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim"};
  spec.valued.insert(kWeightsDirFlag);
  spec.switches = {"print-ir", kWeightsInMemoryFlag};
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) return UsageError("inspect", kUsage, std::string(args.status().message()));
  if (args->positional.size() != 1) return UsageError("inspect", kUsage, "expected exactly one MODEL.onnx");
  const std::string& path = args->positional[0];
  ImportOptions options;
  for (const std::string& dim : args->All("dim")) {
    if (absl::Status s = ParseDimFlag(dim, &options); !s.ok()) return UsageError("inspect", kUsage, std::string(s.message()));
  }
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(*args, "");
  if (!weights_dir.ok()) return UsageError("inspect", kUsage, std::string(weights_dir.status().message()));
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(*weights_dir);
  options.spill = spill.get();
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  if (!file.ok()) return Fail(kExitUsage, file.status().message());
  onnx::ModelProto* proto = file->model.get();
  // Summarized before the import releases the message's weights.
  ModelSummary summary = SummarizeOnnxModel(*proto);
  std::printf("model: %s\n", Escaped(path).c_str());
  // The checker first, on its own: a model it rejects is bad input (2),
  // while one it accepts but shapeshift cannot import is a negative answer (1).
  std::vector<std::string> checker_notes;
  const size_t slash = path.find_last_of('/');
  const std::string model_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (absl::Status checked = CheckOnnxModel(*proto, model_dir, &checker_notes); !checked.ok()) {
    PrintSummary(summary);
    return Fail(absl::IsUnimplemented(checked) ? kExitNegative : kExitUsage, absl::StrCat(path, ": ", checked.message()));
  }
  options.run_checker = false;
  const bool flags_at_fault = DimFlagNamesAreAtFault(*proto, options);
  absl::StatusOr<ImportedModel> model = ImportParsedOnnxFile(*file, options);
  if (model.ok()) {
    model->notes.insert(model->notes.begin(), checker_notes.begin(), checker_notes.end());
    PrintModel(*model);
  }
  PrintSummary(summary);
  if (!model.ok()) return Fail(flags_at_fault ? kExitUsage : kExitNegative, model.status().message());
  // The IR as imported, before the check's passes run on their copy.
  if (args->Has("print-ir")) std::printf("\n%s", EscapedLines(model->graph->ToString()).c_str());
  const std::vector<std::string> slots = RequestSlots(*model->graph);
  const runtime::TierCheck tier = runtime::CheckTier(*model->graph, *model->env, slots, runtime::Tier::kPolymorphic);
  std::printf("compiled lowering: ");
  PrintTierCheck(stdout, tier, slots);
  return tier.check.compilable() ? kExitOk : kExitNegative;
}

}  // namespace

SHAPESHIFT_COMMAND(inspect, "inspect", "show a model's inputs/outputs with symbolic shapes, op histogram, unsupported ops",
                   kUsage, RunInspect);

}  // namespace shapeshift::tools
