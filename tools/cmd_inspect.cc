// `shapeshift inspect MODEL.onnx [--dim name=lo..hi | name=a+b]... [--print-ir]`
//
// Shows what the importer sees: symbols and their ranges, inputs/outputs
// with symbolic shapes, the importer's notes (e.g. a dim narrowed to the
// range the model implies), the op histogram and every unsupported op; with
// --print-ir the whole graph with each value's symbolic type. Exit 0 when
// the model imports, 1 when it parses but cannot be imported (unsupported
// ops, undecidable shapes), 2 for bad usage or an unreadable file.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "graph/onnx/importer.h"
#include "graph/onnx/model_summary.h"
#include "graph/printer.h"
#include "onnx/onnx_pb.h"
#include "tools/args.h"
#include "tools/command.h"

namespace shapeshift::tools {
namespace {

void PrintSummary(const ModelSummary& summary) {
  int total = 0;
  for (const auto& [op, count] : summary.op_histogram) total += count;
  std::printf("ops: %d nodes, %zu op types\n", total, summary.op_histogram.size());
  for (const auto& [op, count] : summary.op_histogram) std::printf("  %-24s %d\n", op.c_str(), count);
  if (summary.unsupported.empty()) {
    std::printf("unsupported ops: none\n");
    return;
  }
  std::printf("unsupported ops: %zu\n", summary.unsupported.size());
  for (const UnsupportedOp& u : summary.unsupported) {
    std::printf("  %s (node '%s', opset %d)\n", u.op_type.c_str(), u.node.c_str(), u.opset);
  }
}

void PrintModel(const ImportedModel& model) {
  std::printf("opset: %d  ir_version: %lld  producer: %s\n", model.opset,
              static_cast<long long>(model.ir_version), model.producer.empty() ? "-" : model.producer.c_str());
  std::printf("symbols:\n");
  for (const SymbolInfo& s : model.env->symbols()) {
    std::printf("  %s in [%lld, %lld]\n", s.name.c_str(), static_cast<long long>(s.min),
                static_cast<long long>(s.max));
  }
  std::printf("inputs:\n");
  for (const Value* v : model.graph->inputs()) std::printf("  %s\n", PrintValueDecl(*v).c_str());
  std::printf("outputs:\n");
  for (const Value* v : model.graph->outputs()) std::printf("  %s\n", PrintValueDecl(*v).c_str());
  std::printf("constants: %zu\n", model.graph->constants().size());
  // What the importer decided on the user's behalf (a dim narrowed to the
  // range the model implies, a relaxed check), each with its reason.
  std::printf("notes:%s\n", model.notes.empty() ? " none" : "");
  for (const std::string& note : model.notes) std::printf("  %s\n", note.c_str());
}

int RunInspect(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim"};
  spec.switches = {"print-ir"};
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) {
    std::fprintf(stderr, "shapeshift inspect: %s\n", std::string(args.status().message()).c_str());
    return kExitUsage;
  }
  if (args->positional.size() != 1) {
    std::fprintf(stderr, "usage: shapeshift inspect MODEL.onnx [--dim name=lo..hi | name=a+b]... [--print-ir]\n");
    return kExitUsage;
  }
  const std::string& path = args->positional[0];
  ImportOptions options;
  for (const std::string& dim : args->All("dim")) {
    if (absl::Status s = ParseDimFlag(dim, &options); !s.ok()) {
      std::fprintf(stderr, "shapeshift inspect: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  absl::StatusOr<onnx::ModelProto> proto = ParseOnnxFile(path);
  if (!proto.ok()) {
    std::fprintf(stderr, "shapeshift inspect: %s\n", std::string(proto.status().message()).c_str());
    return kExitUsage;
  }
  // Summarized before the import releases the message's weights.
  ModelSummary summary = SummarizeOnnxModel(*proto);
  std::printf("model: %s\n", path.c_str());
  absl::StatusOr<ImportedModel> model = ImportParsedOnnxFile(*proto, path, options);
  if (model.ok()) PrintModel(*model);
  PrintSummary(summary);
  if (!model.ok()) {
    std::fprintf(stderr, "shapeshift inspect: %s\n", std::string(model.status().message()).c_str());
    return kExitNegative;
  }
  if (args->Has("print-ir")) std::printf("\n%s", model->graph->ToString().c_str());
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(inspect, "inspect", "show a model's inputs/outputs with symbolic shapes, op histogram, unsupported ops",
                   RunInspect);

}  // namespace shapeshift::tools
