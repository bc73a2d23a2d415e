// Fused attention in compiled Programs (CompileOptions::fuse_attention, on
// by default): on the torch exports whose attentions fusion merges
// (passes/internal/attention_groups.h) — encoders with a padding mask,
// decoders' causal prefill, BART's encoder, causal decoder and cross
// attention, GPT-NeoX's and Phi's head-major Q and K, grouped-query and
// multi-query attention (Llama, Qwen2, Mistral, Gemma, StableLM, Falcon,
// StarCoder) — the Program runs one
// fused step per layer's attention, and its outputs match the unfused
// Program's (two oneDNN GEMMs, a softmax, transposes) and the reference
// interpreter at odd lengths, in batches with padded rows.
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

using ::shapeshift::testing::AllFinite;
using ::shapeshift::testing::MaxAbsDifference;

// fp32 in another summation order (online softmax, tiles of keys).
constexpr double kMaxAbsDiff = 1e-4;

struct Case {
  const char* dir;
  int attentions;  // fused steps per request
};

// Inputs for batch × sequence (decoder_sequence = sequence / 2 + 1): ids in
// [5, 1000), masks of ones with a padded tail in every row after the first,
// segment ids 0 then 1.
std::vector<Tensor> MakeInputs(const Graph& graph, int64_t batch, int64_t sequence, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    const bool decoder = input->name().rfind("decoder_", 0) == 0;
    const int64_t cols = decoder ? sequence / 2 + 1 : sequence;
    std::vector<int64_t> v(batch * cols);
    for (int64_t r = 0; r < batch; ++r) {
      const int64_t valid = r == 0 || cols < 3 ? cols : cols - 1 - static_cast<int64_t>(rng() % (cols - 2));
      for (int64_t c = 0; c < cols; ++c) {
        int64_t& x = v[r * cols + c];
        if (input->name().find("input_ids") != std::string::npos) {
          x = 5 + static_cast<int64_t>(rng() % 995);
        } else if (input->name().find("attention_mask") != std::string::npos) {
          x = c < valid ? 1 : 0;
        } else {
          x = c >= cols / 2 ? 1 : 0;  // token_type_ids
        }
      }
    }
    inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, {batch, cols}, v));
  }
  return inputs;
}

// Runs `inputs` on both programs and the interpreter; every output of the
// fused program is finite where the others are and within kMaxAbsDiff of both.
void ExpectFusedMatches(Session& fused, Session& unfused, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::vector<Tensor>> got = fused.Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<Tensor>> plain = unfused.Run(inputs);
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<std::vector<Tensor>> reference = fused.RunReference(inputs);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(got->size(), plain->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_TRUE(AllFinite((*got)[i])) << "output " << i;
    EXPECT_LE(MaxAbsDifference((*got)[i], (*plain)[i]), kMaxAbsDiff) << "output " << i << " vs unfused";
    EXPECT_LE(MaxAbsDifference((*got)[i], (*reference)[i]), kMaxAbsDiff) << "output " << i << " vs interpreter";
  }
}

class FusedAttentionProgramTest : public ::testing::TestWithParam<Case> {};

TEST_P(FusedAttentionProgramTest, OneStepPerAttentionMatchingTheUnfusedProgramAndTheInterpreter) {
  const std::string path = absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", GetParam().dir, "/model.onnx");
  CompileOptions fused_options;
  CompileOptions unfused_options;
  unfused_options.fuse_attention = false;
  absl::StatusOr<std::unique_ptr<Session>> fused = Session::Create(ModelSource::OnnxFile(path), fused_options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<std::unique_ptr<Session>> unfused = Session::Create(ModelSource::OnnxFile(path), unfused_options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  uint32_t seed = 1;
  for (int64_t sequence : {1, 2, 17, 64, 130}) {
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(GetParam().dir, " batch ", batch, " sequence ", sequence));
      ExpectFusedMatches(**fused, **unfused, MakeInputs((*fused)->graph(), batch, sequence, seed++));
    }
  }
  EXPECT_EQ((*fused)->stats().program.attention_calls, GetParam().attentions);
  EXPECT_EQ((*unfused)->stats().program.attention_calls, 0);
  // Per attention: 2 GEMMs out, and the softmax, NaN Where and transpose kernels.
  EXPECT_EQ((*fused)->stats().program.gemm_calls, (*unfused)->stats().program.gemm_calls - 2 * GetParam().attentions);
  EXPECT_LT((*fused)->stats().program.steps, (*unfused)->stats().program.steps - 2 * GetParam().attentions);
}

INSTANTIATE_TEST_SUITE_P(Exports, FusedAttentionProgramTest,
                         ::testing::Values(Case{"bert-base-torchscript", 2}, Case{"bert-base-dynamo", 2},
                                           Case{"gpt2-torchscript", 2}, Case{"gpt2-dynamo", 2},
                                           Case{"bart-torchscript", 6}, Case{"opt-dynamo", 2},
                                           Case{"gpt-neox-torchscript", 2}, Case{"phi-dynamo", 2},
                                           // Grouped-query (4 query heads per 2 or 1 key/value heads) and
                                           // multi-query attention, through the grouped-query matmul's views.
                                           Case{"llama-torchscript", 2}, Case{"llama-dynamo", 2},
                                           Case{"qwen2-dynamo", 2}, Case{"mistral-torchscript", 2},
                                           Case{"gemma-dynamo", 2}, Case{"stablelm-torchscript", 2},
                                           Case{"falcon-torchscript", 2}, Case{"gpt-bigcode-dynamo", 2}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.dir;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Decoders with past: the attention reads the presents (the KV caches'
// Concat outputs) in place — one fused step per layer, decode and prefill
// after a cache alike. (Bound caches: kv_cache_test.cc runs every past
// export bound and plain, bit for bit.)
class FusedDecodeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedDecodeTest, ReadsThePresentsInPlace) {
  const std::string path = absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", GetParam(), "/model.onnx");
  CompileOptions unfused_options;
  unfused_options.fuse_attention = false;
  absl::StatusOr<std::unique_ptr<Session>> fused = Session::Create(ModelSource::OnnxFile(path), CompileOptions{});
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<std::unique_ptr<Session>> unfused = Session::Create(ModelSource::OnnxFile(path), unfused_options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ((*fused)->stats().program.attention_calls, 2);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto [batch, past, sequence] : {std::tuple<int64_t, int64_t, int64_t>{1, 37, 1}, {2, 5, 9}, {3, 130, 1}}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch, " past ", past, " sequence ", sequence));
    std::vector<Tensor> inputs;
    for (const Value* input : (*fused)->graph().inputs()) {
      const std::string& name = input->name();
      if (name == "input_ids") {
        std::vector<int64_t> ids(batch * sequence);
        for (int64_t& id : ids) id = 5 + static_cast<int64_t>(rng() % 995);
        inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, {batch, sequence}, ids));
      } else if (name == "attention_mask") {
        std::vector<int64_t> mask(batch * (past + sequence), 1);
        if (batch > 1) mask[past + sequence] = 0;  // the second row's first cached position is padding
        inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, {batch, past + sequence}, mask));
      } else {
        const int64_t heads = *input->type().shape[1].AsConst(), d = *input->type().shape[3].AsConst();
        std::vector<float> v(batch * heads * past * d);
        for (float& x : v) x = normal(rng);
        inputs.push_back(Tensor::FromVector<float>(DType::kF32, {batch, heads, past, d}, v));
      }
    }
    ExpectFusedMatches(**fused, **unfused, inputs);
  }
}

INSTANTIATE_TEST_SUITE_P(Exports, FusedDecodeTest,
                         ::testing::Values("gpt2-past-dynamo", "llama-past-dynamo", "qwen2-past-torchscript",
                                           "mistral-past-dynamo", "falcon-past-dynamo", "gpt-bigcode-past-dynamo"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace shapeshift::runtime
