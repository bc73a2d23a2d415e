// `shapeshift generate`: greedy decoding with bound KV caches generates, at
// every step, a token the reference interpreter also ranks first when it
// reads the whole prefix with empty caches (an independent path: no cache,
// no compiled kernel); the plain form (--plain-kv) generates the same ids;
// one compile; the caches grow once past their first capacity; and inputs
// that do not fit say so with exit 2.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/session.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift {
namespace {

std::string Model(const std::string& name) {
  return absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", name, "/model.onnx");
}

nlohmann::json Generate(const std::string& args, int* exit_code) {
  testing::CliResult r = testing::RunShapeshift("generate " + args + " --json --no-cache");
  *exit_code = r.exit_code;
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.output.substr(0, 2000);
  return j;
}

// The reference: the interpreter over the whole prefix, past empty; true
// when `token` is within 1e-4 of the best logit at the last position (a
// near-tie may rank either first in another summation order).
void ExpectGreedyUnderTheInterpreter(const std::string& model, const std::vector<int64_t>& prompt,
                                     const std::vector<int64_t>& generated) {
  ImportOptions options;
  options.dim_ranges = {{"batch", {1, 1}}, {"sequence", {1, 64}}, {"past_sequence", {0, 64}}};
  absl::StatusOr<ImportedModel> imported = ImportOnnxFile(Model(model), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(imported->graph), std::move(imported->env), model));
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<int64_t> prefix = prompt;
  for (size_t k = 0; k < generated.size(); ++k) {
    const int64_t length = static_cast<int64_t>(prefix.size());
    std::vector<Tensor> inputs;
    for (const Value* input : (*session)->graph().inputs()) {
      if (input->name() == "input_ids") {
        inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, {1, length}, prefix));
      } else if (input->name() == "attention_mask") {
        inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, {1, length}, std::vector<int64_t>(length, 1)));
      } else {
        const std::vector<SymExpr>& s = input->type().shape;
        inputs.push_back(Tensor::FromVector<float>(DType::kF32, {1, *s[1].AsConst(), 0, *s[3].AsConst()}, {}));
      }
    }
    absl::StatusOr<std::vector<Tensor>> out = (*session)->RunReference(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& logits = (*out)[0];
    const int64_t vocab = logits.shape()[2];
    const float* row = logits.data<float>() + (length - 1) * vocab;
    const float best = *std::max_element(row, row + vocab);
    ASSERT_LT(generated[k], vocab);
    EXPECT_GE(row[generated[k]], best - 1e-4f) << model << " step " << k << ": token " << generated[k];
    prefix.push_back(generated[k]);
  }
}

TEST(GenerateCliTest, GreedyTokensAreTheInterpretersAndBoundEqualsPlain) {
  const std::vector<int64_t> prompt = {17, 402, 3, 999, 250, 61, 7};
  const std::string ids = absl::StrJoin(prompt, ",");
  // Llama and Qwen2: grouped-query attention; Falcon: one key/value head; GPT-2: plain.
  for (const char* model : {"llama-past-dynamo", "qwen2-past-torchscript", "falcon-past-dynamo", "gpt2-past-dynamo"}) {
    SCOPED_TRACE(model);
    const std::string args = absl::StrCat(Model(model), " --prompt 1x7 --prompt-ids ", ids,
                                          " --steps 12 --dim past_sequence=0..64");
    int bound_exit = -1, plain_exit = -1;
    nlohmann::json bound = Generate(args, &bound_exit);
    nlohmann::json plain = Generate(args + " --plain-kv", &plain_exit);
    ASSERT_EQ(bound_exit, 0) << bound.dump();
    ASSERT_EQ(plain_exit, 0) << plain.dump();
    EXPECT_EQ(bound["mode"], "bound");
    EXPECT_EQ(plain["mode"], "plain");
    EXPECT_EQ(bound["compiles"], 1);
    EXPECT_EQ(bound["fused_attentions"], 2);  // both layers' attention in the fused kernel
    const std::vector<int64_t> tokens = bound["tokens"].get<std::vector<int64_t>>();
    ASSERT_EQ(tokens.size(), 12u);
    EXPECT_EQ(bound["tokens"], plain["tokens"]);
    EXPECT_GT(bound["prefill_ms"].get<double>(), 0.0);
    EXPECT_GT(bound["decode_tokens_per_s"].get<double>(), 0.0);
    ExpectGreedyUnderTheInterpreter(model, prompt, tokens);
  }
}

// A batch of prompts, generated twice from fresh caches (--repeats); 60 + 9
// positions outgrow the first capacity (64) once per generation. No --dim:
// the cache dim's default range starts at 0 (graph/onnx/cache_dims.h).
TEST(GenerateCliTest, BatchedCachesGrowOnceWithoutRecompiling) {
  int exit_code = -1;
  nlohmann::json r = Generate(Model("llama-past-torchscript") + " --prompt 3x60 --steps 10 --repeats 2", &exit_code);
  ASSERT_EQ(exit_code, 0) << r.dump();
  EXPECT_EQ(r["batch"], 3);
  EXPECT_EQ(r["repeats"], 2);
  EXPECT_EQ(r["prefills_ms"].size(), 2u);
  EXPECT_EQ(r["compiles"], 1);
  EXPECT_EQ(r["cache_growths"], 1);
  EXPECT_EQ(r["cache_capacity"], 128);
  EXPECT_EQ(r["tokens"].size(), 10u);
}

TEST(GenerateCliTest, InputsThatDoNotFitExitTwoSayingWhy) {
  struct Case {
    std::string args;
    std::string says;
  };
  const std::string llama = Model("llama-past-dynamo");
  for (const Case& c : std::vector<Case>{
           {Model("bert-base-torchscript"), "no KV caches"},
           {llama + " --dim past_sequence=1..64", "past_sequence=0..N"},  // a declared past range without 0
           {llama + " --prompt 0x5", "--prompt"},
           {llama + " --prompt 1x3 --prompt-ids 1,2", "(expected 3)"},
           {llama + " --prompt 1x2 --prompt-ids 1,100000 --dim past_sequence=0..8", "outside the vocabulary"},
           {llama + " --prompt 1x2 --prompt-ids 1,2 --seed 4", "--seed"},
           {llama + " --steps 0", "--steps"},
           {llama + " --repeats 0", "--repeats"},
           {llama + " --bogus", "bogus"},
       }) {
    testing::CliResult r = testing::RunShapeshift("generate " + c.args + " --no-cache", "2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace shapeshift
