// examples/gpt2_decode: greedy decoding with a growing KV cache compiles the
// model once, and every step's logits match a no-cache run of builtin:gpt2
// (same weights) on the same token prefix (rtol 1e-3, atol 1e-4).
//
// The example is run as a program (its path is SHAPESHIFT_GPT2_DECODE) and
// the reference is computed here: a runtime::Session over BuildGpt2 without
// the cache, fed the whole prefix each step.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "examples/models/gpt2.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/session.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

nlohmann::json RunExample(const std::string& args, int* exit_code) {
  testing::CliResult r = testing::RunCommand(std::string(SHAPESHIFT_GPT2_DECODE) + " " + args + " 2>&1");
  *exit_code = r.exit_code;
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.output.substr(0, 2000);
  return j;
}

TEST(Gpt2DecodeExampleTest, OneCompileAndLogitsMatchANoCacheRunOnTheSamePrefix) {
  int exit_code = -1;
  nlohmann::json j = RunExample("--steps 5 --prompt 11,4000,8191 --json --logits", &exit_code);
  ASSERT_EQ(exit_code, 0) << j.dump().substr(0, 2000);
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["compiles"], 1);
  const std::vector<int64_t> tokens = j["tokens"].get<std::vector<int64_t>>();
  ASSERT_EQ(tokens.size(), 3u + 5u);

  examples::Gpt2Config config;  // builtin:gpt2: the same weights without the cache
  absl::StatusOr<ImportedModel> model = examples::BuildGpt2(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)));
  ASSERT_TRUE(session.ok()) << session.status();

  int64_t past = 0;
  for (const nlohmann::json& step : j["steps"]) {
    const int64_t seq = step["seq"].get<int64_t>();
    EXPECT_EQ(step["past"].get<int64_t>(), past);
    EXPECT_EQ(seq, past == 0 ? 3 : 1);  // the prefill, then one token per step
    EXPECT_EQ(step["compiles"], 1) << "step " << step["step"];
    // The no-cache model sees the whole prefix and predicts from its last position.
    std::vector<int64_t> prefix(tokens.begin(), tokens.begin() + past + seq);
    const int64_t length = static_cast<int64_t>(prefix.size());
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({Tensor::FromVector(DType::kI64, {1, length}, prefix)});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& logits = (*out)[0];
    const float* expected = logits.data<float>() + (length - 1) * config.vocab;
    const std::vector<double> actual = step["logits"].get<std::vector<double>>();
    ASSERT_EQ(static_cast<int64_t>(actual.size()), config.vocab);
    int64_t mismatches = 0;
    double worst = 0;
    for (int64_t v = 0; v < config.vocab; ++v) {
      const double error = std::abs(actual[v] - expected[v]);
      worst = std::max(worst, error);
      if (!(error <= kAtol + kRtol * std::abs(expected[v]))) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0) << "step " << step["step"] << ": max abs error " << worst;
    EXPECT_EQ(step["next_token"].get<int64_t>(), tokens[past + seq]);
    past += seq;
  }
}

// The bound form (the default) and plain ONNX semantics (--plain) decode
// the same tokens with the same logits; the bound caches grow 16 -> 32 -> 64
// as the decode passes each capacity.
TEST(Gpt2DecodeExampleTest, BoundCachesDecodeAsPlainOnnxSemanticsDo) {
  int bound_exit = -1, plain_exit = -1;
  nlohmann::json bound = RunExample("--steps 40 --prompt 11,4000,8191 --json --logits", &bound_exit);
  nlohmann::json plain = RunExample("--steps 40 --prompt 11,4000,8191 --plain --json --logits", &plain_exit);
  ASSERT_EQ(bound_exit, 0) << bound.dump().substr(0, 2000);
  ASSERT_EQ(plain_exit, 0) << plain.dump().substr(0, 2000);
  EXPECT_EQ(bound["mode"], "bound");
  EXPECT_EQ(plain["mode"], "plain");
  EXPECT_EQ(bound["tokens"], plain["tokens"]);
  ASSERT_EQ(bound["steps"].size(), plain["steps"].size());
  for (size_t i = 0; i < bound["steps"].size(); ++i) {
    const std::vector<double> b = bound["steps"][i]["logits"].get<std::vector<double>>();
    const std::vector<double> p = plain["steps"][i]["logits"].get<std::vector<double>>();
    ASSERT_EQ(b.size(), p.size());
    double worst = 0;
    for (size_t v = 0; v < b.size(); ++v) worst = std::max(worst, std::abs(b[v] - p[v]));
    EXPECT_LE(worst, kAtol) << "step " << i;
    EXPECT_EQ(plain["steps"][i]["capacity"], plain["steps"][i]["past"].get<int64_t>() + plain["steps"][i]["seq"].get<int64_t>());
  }
  // 3 + 39 = 42 positions: 16 -> 32 at 16 held, 32 -> 64 at 32.
  ASSERT_EQ(bound["growths"].size(), 2u) << bound["growths"].dump();
  EXPECT_EQ(bound["growths"][0]["from"], 16);
  EXPECT_EQ(bound["growths"][0]["to"], 32);
  EXPECT_EQ(bound["growths"][1]["to"], 64);
  EXPECT_EQ(bound["steps"].back()["capacity"], 64);
  EXPECT_EQ(bound["compiles"], 1);
}

TEST(Gpt2DecodeExampleTest, BadArgumentsExitTwo) {
  for (const char* args : {"--steps 0", "--prompt 1,x", "--prompt 9000", "--logits", "--bogus", "--steps 600"}) {
    testing::CliResult r = testing::RunCommand(std::string(SHAPESHIFT_GPT2_DECODE) + " " + args + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("usage: gpt2_decode"), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace shapeshift
