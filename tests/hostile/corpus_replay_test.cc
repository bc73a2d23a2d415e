// Replays the fuzz harnesses' committed seed corpora (tests/fuzz/corpus/)
// through the same checks the libFuzzer entry points run, so the plain g++
// build exercises every harness property and every reproducer added to a
// corpus after a crash stays fixed.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/checks/expr_checks.h"
#include "tests/fuzz/checks/onnx_import_check.h"

namespace shapeshift::fuzz {
namespace {

std::vector<std::filesystem::path> CorpusFiles(const std::string& harness) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SHAPESHIFT_FUZZ_CORPUS_DIR) + "/" + harness)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void ReplayCorpus(const std::string& harness, Violation (*check)(absl::string_view)) {
  std::vector<std::filesystem::path> files = CorpusFiles(harness);
  ASSERT_GE(files.size(), 5u) << "seed corpus for " << harness << " is missing";
  for (const auto& file : files) {
    Violation v = check(ReadFile(file));
    EXPECT_FALSE(v.has_value()) << file.filename() << ": " << *v;
  }
}

TEST(FuzzCorpusReplayTest, OnnxImport) { ReplayCorpus("onnx_import", &CheckOnnxImport); }
TEST(FuzzCorpusReplayTest, SymExpr) { ReplayCorpus("sym_expr", &CheckSymExprText); }
TEST(FuzzCorpusReplayTest, Predicate) { ReplayCorpus("predicate", &CheckPredicateText); }
TEST(FuzzCorpusReplayTest, GuardProgram) { ReplayCorpus("guard_program", &CheckGuardProgramText); }

// Invalid text is rejected input, not a violation; deep nesting past the
// reference parser's limit gets no opinion rather than a false alarm.
TEST(FuzzChecksTest, InvalidOrTooDeepTextIsNotAViolation) {
  EXPECT_FALSE(CheckSymExprText("a +").has_value());
  EXPECT_FALSE(CheckPredicateText("a < ").has_value());
  EXPECT_FALSE(CheckGuardProgramText("a <\n)(").has_value());
  EXPECT_FALSE(CheckOnnxImport("not a model").has_value());
  EXPECT_FALSE(CheckSymExprText(std::string(300, '(') + "a" + std::string(300, ')')).has_value());
}

}  // namespace
}  // namespace shapeshift::fuzz
