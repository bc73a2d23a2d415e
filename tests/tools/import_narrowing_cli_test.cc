// Model-implied dim ranges through the CLI: a torch export runs without any
// --dim (its undeclared `sequence` is narrowed to the 512 rows of its
// position table at import), `inspect` shows the narrowed range and the note
// saying which node implied it, and a request past the limit exits non-zero
// with a message naming the dim — nothing is compiled for it, nothing crashes.
// The same for a limit a Gather's table implies (GPT-2's 1024 positions),
// through prove, check and inspect too.
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using shapeshift::testing::CliResult;

const std::string& BertExport() {
  static const std::string path =
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/bert-base-torchscript/model.onnx";
  return path;
}

std::string BertInputs(int sequence) {
  const std::string shape = "1x" + std::to_string(sequence);
  return " --input input_ids=" + shape + " --input attention_mask=" + shape + " --input token_type_ids=" + shape;
}

struct Outputs {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `shapeshift ARGS` with stdout and stderr kept apart.
Outputs RunCli(const std::string& args) {
  const std::string err_path = shapeshift::testing::ProcessTempPath("import_narrowing_stderr.txt");
  CliResult r = shapeshift::testing::RunShapeshift(args, "2>" + err_path);
  Outputs o{r.exit_code, std::move(r.output), ""};
  std::ifstream err(err_path);
  o.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return o;
}

TEST(ImportNarrowingCliTest, RunWithoutDimFlagsWorksAndMatchesTheInterpreter) {
  Outputs r = RunCli("run " + BertExport() + BertInputs(16) + " --check --json --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dims"]["sequence"], 16);
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 16, 64}));
  EXPECT_TRUE(j["check_passed"].get<bool>());
  EXPECT_EQ(j["compiles"], 1);
  ASSERT_EQ(j["notes"].size(), 1u);
  EXPECT_THAT(j["notes"][0].get<std::string>(), HasSubstr("dim 'sequence' limited to 1..512"));
}

TEST(ImportNarrowingCliTest, RunPrintsTheNoteInTextModeAndInTraceReports) {
  Outputs one = RunCli("run " + BertExport() + BertInputs(8) + " --repeats 1 --no-cache");
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_THAT(one.out, HasSubstr("note: dim 'sequence' limited to 1..512: node '/model/embeddings/Add_1'"));
  Outputs trace = RunCli("run " + BertExport() + " --trace lognormal:5 --check-every 0 --json --no-cache");
  ASSERT_EQ(trace.exit_code, 0) << trace.out << trace.err;
  nlohmann::json j = nlohmann::json::parse(trace.out);
  ASSERT_EQ(j["notes"].size(), 1u);
  EXPECT_THAT(j["notes"][0].get<std::string>(), HasSubstr("limited to 1..512"));
}

TEST(ImportNarrowingCliTest, InspectShowsTheNarrowedRangeAndTheNote) {
  Outputs r = RunCli("inspect " + BertExport());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("  sequence in [1, 512]\n"));
  EXPECT_THAT(r.out, HasSubstr("  batch in [1, 65536]\n"));
  EXPECT_THAT(r.out, HasSubstr("notes:\n  dim 'sequence' limited to 1..512: node '/model/embeddings/Add_1' (Add) needs "));
  EXPECT_THAT(r.out, HasSubstr("declare --dim sequence=lo..hi to choose a range"));
}

TEST(ImportNarrowingCliTest, InspectWithDeclaredRangesHasNoNotes) {
  Outputs r = RunCli("inspect " + BertExport() + " --dim sequence=1..128");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("  sequence in [1, 128]\n"));
  EXPECT_THAT(r.out, HasSubstr("notes: none\n"));
}

TEST(ImportNarrowingCliTest, DeclaredRangeTooWideFailsNamingTheRangeThatWorks) {
  Outputs r = RunCli("inspect " + BertExport() + " --dim sequence=1..1024");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("holds only for sequence <= 512; declare --dim sequence=1..512"));
}

TEST(ImportNarrowingCliTest, RequestPastTheModelsLimitIsRefusedNamingTheDim) {
  Outputs r = RunCli("run " + BertExport() + BertInputs(600) + " --no-cache");
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.exit_code, -1) << "killed by a signal: " << r.err;
  EXPECT_THAT(r.err, HasSubstr("sequence = 600 is outside the declared range 1..512"));
}

// GPT-2's positions are Range(0, sequence) into a 1024-row table
// (graph/value_bounds.h): the domain the export can serve is sequence
// 1..1024, and run, check, inspect and prove all say so.
const std::string& Gpt2Export() {
  static const std::string path =
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-torchscript/model.onnx";
  return path;
}

std::string Gpt2Inputs(int sequence) {
  const std::string shape = "1x" + std::to_string(sequence);
  return " --input input_ids=" + shape + " --input attention_mask=" + shape;
}

TEST(ImportNarrowingCliTest, ProveCertifiesOnlyTheDomainAGatherTableAllows) {
  Outputs r = RunCli("prove " + Gpt2Export() + " --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("covered\n"));
  EXPECT_THAT(r.out, HasSubstr("sequence=1..1024"));
  EXPECT_THAT(r.out, HasSubstr("note: dim 'sequence' limited to 1..1024: node '"));
  EXPECT_THAT(r.out, HasSubstr("(Gather) reads rows up to sequence - 1 of table '"));
  Outputs j = RunCli("prove " + Gpt2Export() + " --no-cache --json");
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["domain"]["sequence"], "1..1024");
  EXPECT_TRUE(out["covered"].get<bool>());
}

TEST(ImportNarrowingCliTest, ProveOverADeclaredDomainPastTheTableIsRefusedNamingTheGather) {
  Outputs r = RunCli("prove " + Gpt2Export() + " --dim sequence=1..65536 --no-cache");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("(Gather): indices "));
  EXPECT_THAT(r.err, HasSubstr("(1024 rows)"));
  EXPECT_THAT(r.err, HasSubstr("the model serves only sequence <= 1024; declare --dim sequence=1..1024"));
}

TEST(ImportNarrowingCliTest, CheckAndInspectShowTheGatherLimit) {
  Outputs check = RunCli("check " + Gpt2Export());
  EXPECT_THAT(check.out, HasSubstr("sequence in [1, 1024]"));
  EXPECT_THAT(check.out, HasSubstr("dim 'sequence' limited to 1..1024: node '"));
  Outputs inspect = RunCli("inspect " + Gpt2Export());
  EXPECT_THAT(inspect.out, HasSubstr("  sequence in [1, 1024]\n"));
  EXPECT_THAT(inspect.out, HasSubstr("(Gather) reads rows up to sequence - 1"));
}

TEST(ImportNarrowingCliTest, RequestPastAGatherTableIsRefusedNamingTheDimTheBoundAndTheNode) {
  Outputs r = RunCli("run " + Gpt2Export() + Gpt2Inputs(1025) + " --no-cache");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // a request outside the declared ranges
  EXPECT_THAT(r.err, HasSubstr("sequence = 1025 is outside the declared range 1..1024; dim 'sequence' limited to "
                               "1..1024: node '"));
  EXPECT_THAT(r.err, HasSubstr("(Gather) reads rows up to sequence - 1 of table '"));
  // The last position the table holds is served, and agrees with the interpreter.
  Outputs last = RunCli("run " + Gpt2Export() + Gpt2Inputs(1024) + " --check --json --no-cache");
  ASSERT_EQ(last.exit_code, 0) << last.out << last.err;
  EXPECT_TRUE(nlohmann::json::parse(last.out)["check_passed"].get<bool>());
}

// GPT-2 with past reads rows past_sequence .. past_sequence + sequence - 1
// of the same table: the domain is the relation past_sequence + sequence
// <= 1024 (graph/README.md, "Relations between dims"), not a range.
const std::string& Gpt2PastExport() {
  static const std::string path =
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-past-torchscript/model.onnx";
  return path;
}

std::string Gpt2PastInputs(int past, int sequence) {
  std::string flags = " --input input_ids=1x" + std::to_string(sequence) +
                      " --input attention_mask=1x" + std::to_string(past + sequence);
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* kv : {"key", "value"}) {
      flags += " --input past_key_values." + std::to_string(layer) + "." + kv + "=1x4x" + std::to_string(past) + "x16";
    }
  }
  return flags;
}

TEST(ImportNarrowingCliTest, ProveCertifiesOnlyThePairsAPastModelServes) {
  Outputs r = RunCli("prove " + Gpt2PastExport() + " --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("covered\n"));
  EXPECT_THAT(r.out, HasSubstr(" sequence=1..1024"));
  EXPECT_THAT(r.out, HasSubstr(" past_sequence=0..1023"));
  EXPECT_THAT(r.out, HasSubstr(" where past_sequence + sequence <= 1024\n"));
  EXPECT_THAT(r.out, HasSubstr("note: dims 'past_sequence' and 'sequence' limited to past_sequence + sequence <= "
                               "1024: node '"));
  Outputs j = RunCli("prove " + Gpt2PastExport() + " --no-cache --json");
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["domain_relations"], nlohmann::json::array({"past_sequence + sequence <= 1024"}));
  EXPECT_TRUE(out["covered"].get<bool>());
}

TEST(ImportNarrowingCliTest, CheckAndInspectShowTheRelation) {
  Outputs check = RunCli("check " + Gpt2PastExport());
  EXPECT_THAT(check.out, HasSubstr("  where past_sequence + sequence <= 1024\n"));
  Outputs inspect = RunCli("inspect " + Gpt2PastExport());
  EXPECT_THAT(inspect.out, HasSubstr("  past_sequence in [0, 1023]\n"));
  EXPECT_THAT(inspect.out, HasSubstr("  dim 'past_sequence' starts at 0: input 'past_key_values.0."));
  EXPECT_THAT(inspect.out, HasSubstr("  where past_sequence + sequence <= 1024\n"));
}

TEST(ImportNarrowingCliTest, ARequestOutsideTheRelationIsRefusedAndTheLastPairIsServed) {
  Outputs r = RunCli("run " + Gpt2PastExport() + Gpt2PastInputs(1000, 25) + " --no-cache");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("dims past_sequence = 1000, sequence = 25 are outside the model's domain: "
                               "past_sequence + sequence <= 1024 does not hold; dims 'past_sequence' and "
                               "'sequence' limited to"));
  EXPECT_THAT(r.err, HasSubstr("(Gather) reads rows up to past_sequence + sequence - 1 of table '"));
  Outputs last = RunCli("run " + Gpt2PastExport() + Gpt2PastInputs(1000, 24) + " --check --json --no-cache");
  ASSERT_EQ(last.exit_code, 0) << last.out << last.err;
  EXPECT_TRUE(nlohmann::json::parse(last.out)["check_passed"].get<bool>());
  // The other corner: the whole table as a prompt, the cache empty.
  Outputs prompt = RunCli("run " + Gpt2PastExport() + Gpt2PastInputs(0, 1024) + " --check --json --no-cache");
  ASSERT_EQ(prompt.exit_code, 0) << prompt.out << prompt.err;
  EXPECT_TRUE(nlohmann::json::parse(prompt.out)["check_passed"].get<bool>());
}

TEST(ImportNarrowingCliTest, FuzzServesInsideTheRelationAndRefusesOutsideIt) {
  // Replayed: the last pair the table holds, one past it, and one outside a range.
  Outputs replay = RunCli("fuzz " + Gpt2PastExport() +
                          " --case batch=1,sequence=24,past_sequence=1000 --case batch=1,sequence=25,past_sequence=1000"
                          " --case batch=1,sequence=1025,past_sequence=0 --json");
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  nlohmann::json j = nlohmann::json::parse(replay.out);
  EXPECT_EQ(j["cases"], 3);
  EXPECT_EQ(j["served"], 1);
  EXPECT_EQ(j["rejected_as_expected"], 2);
  // Generated: no failure, and the corners outside the relation are among them.
  Outputs generated = RunCli("fuzz " + Gpt2PastExport() + " --cases 40 --seed 3 --dim batch=1..2 --json");
  ASSERT_EQ(generated.exit_code, 0) << generated.out << generated.err;
  nlohmann::json g = nlohmann::json::parse(generated.out);
  EXPECT_EQ(g["failures"].size(), 0u) << generated.out;
  EXPECT_GT(g["served"].get<int>(), 0);
  EXPECT_GT(g["rejected_as_expected"].get<int>(), 0);
}

}  // namespace
}  // namespace shapeshift
