// The model zoo of issue 13 (tests/data/models/<model>-<exporter>/: Llama and
// Qwen2 with and without past key/values, GPT-J, OPT, GPT-Neo, DeBERTa-v2, the
// T5 encoder, BART, ELECTRA, ALBERT, a sentence-transformers embedding model;
// tiny random-weight Hugging Face models
// from bench/peers/export_models.py --zoo, both torch exporters) under the
// default policy, as a new user would run them: no declared dims, `auto`.
//
// Per export, one Session must
//   - compile exactly once and never miss,
//   - reproduce every stored data set (ONNX Runtime's outputs) within
//     kMaxAbsDiff, and
//   - for past models, serve a first step with an empty cache (past_sequence
//     = 0) on the prompts of the no-past sibling's data sets, with that
//     sibling's ONNX Runtime logits, and
//   - serve 20 requests of 20 different lengths (batch 1..3, padded masks,
//     prefills and decode steps for past models, independent decoder lengths
//     for seq2seq), each matching the reference interpreter on the imported
//     graph within kMaxAbsDiff.
//
// kZooExports are the exports that do all of that today: ctest runs them.
// kZooExportsFailingToday are the others, each with the error it gives today
// (issue 13's lowerings and patterns are what they wait for); they become
// tests only when SHAPESHIFT_ZOO_FAILING=1 is set, so that
//   SHAPESHIFT_ZOO_FAILING=1 build/tests/runtime/runtime_test --gtest_filter='ZooFailingToday/*'
// shows where each stands. When one passes, move it to kZooExports.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "tests/graph/imported_model_util.h"
#include "runtime/session.h"
#include "tests/real_exports.h"

namespace shapeshift::runtime {
namespace {

// Exports that pass every check below today (ctest runs these).
constexpr const char* kZooExports[] = {
    "llama-torchscript",      "llama-dynamo",      "llama-past-torchscript", "llama-past-dynamo",
    "qwen2-torchscript",      "qwen2-dynamo",      "qwen2-past-torchscript", "qwen2-past-dynamo",
    "opt-torchscript",        "opt-dynamo",        "gptj-torchscript",       "gptj-dynamo",
    "t5-encoder-torchscript", "t5-encoder-dynamo", "bart-torchscript",       "bart-dynamo",
    "electra-torchscript",    "electra-dynamo",    "albert-torchscript",     "albert-dynamo",
    // Their 512-row position table limits sequence to 1..512 at import
    // (graph/value_bounds.h), which decides their Reshapes' divisibility.
    "gpt-neo-torchscript",    "gpt-neo-dynamo",
    "deberta-v2-torchscript", "deberta-v2-dynamo",
    // Partial rotate_half (a quarter and half of each head rotates).
    "gpt-neox-torchscript",   "gpt-neox-dynamo",   "phi-torchscript",        "phi-dynamo",
    "stablelm-torchscript",   "stablelm-dynamo",
    // Mistral's sliding window; Gemma's one key/value head through repeat_kv,
    // GeGLU and (1 + w) RMSNorm; multi-query attention as Falcon writes it (a
    // MatMul broadcasting the key/value head) and as StarCoder does (heads
    // folded into the rows).
    "mistral-torchscript",    "mistral-dynamo",    "gemma-torchscript",      "gemma-dynamo",
    "falcon-torchscript",     "falcon-dynamo",     "gpt-bigcode-torchscript", "gpt-bigcode-dynamo",
    // ALiBi: BLOOM builds its biases from the mask's cumsum; MPT slices a
    // [heads, 1, 512] table, which limits sequence to 1..512 at import.
    "bloom-torchscript",      "bloom-dynamo",      "mpt-torchscript",        "mpt-dynamo",
    // With past key/values.
    "mistral-past-torchscript", "mistral-past-dynamo", "gemma-past-torchscript", "gemma-past-dynamo",
    "phi-past-torchscript", "phi-past-dynamo", "gpt-neox-past-torchscript", "gpt-neox-past-dynamo",
    "stablelm-past-torchscript", "stablelm-past-dynamo", "falcon-past-torchscript", "falcon-past-dynamo",
    "gpt-bigcode-past-torchscript", "gpt-bigcode-past-dynamo", "bloom-past-torchscript", "bloom-past-dynamo",
    // MPT slices its ALiBi table at 512 - (past_sequence + sequence): the
    // domain's relation past_sequence + sequence <= 512 (graph/README.md).
    // Its dynamo export fails in torch.export (not ours).
    "mpt-past-torchscript",
    // sentence-transformers' pipeline on a tiny BERT: masked mean pooling
    // over the sequence axis (ReduceSum over axis 1: the columns form, the
    // masked product as its prologue) and L2 normalization.
    "sentence-bert-torchscript", "sentence-bert-dynamo",
    // ONNX Runtime's transformer optimizer's output for the tiny BERT and
    // GPT-2 (bench/peers/optimize_for_ort.py): com.microsoft
    // SkipLayerNormalization, BiasGelu, FastGelu, expanded at import
    // (graph/onnx/contrib_ops.h); the data sets are ORT's for that graph.
    "bert-base-torchscript-ort-optimized", "gpt2-torchscript-ort-optimized",
};

// Exports that fail today, with the error each gives (the Session's status,
// the same as `shapeshift run tests/data/models/DIR/model.onnx --inputs-from
// tests/data/models/DIR/test_data_set_0 --check` prints), as of the last
// commit that changed this list. Not run by ctest; SHAPESHIFT_ZOO_FAILING=1
// runs them.
struct FailingExport {
  const char* dir;
  const char* error_today;
};
// Empty since every zoo export compiles (DeBERTa-v2 was the last: its
// relative-position buckets need Sign, Ceil, Log, Tile and GatherElements).
const std::vector<FailingExport> kZooExportsFailingToday = {};

// fp32 against ONNX Runtime and against the interpreter: kernels sum in other
// orders; anything larger is a wrong result.
constexpr double kMaxAbsDiff = 1e-4;
// Every zoo model's tiny vocabulary (bench/peers/peer_inputs.py TINY): token
// ids are drawn from [5, kVocab), above every family's special tokens.
constexpr int64_t kVocab = 1000;
constexpr int kLengths = 20;

std::string ModelDir(const std::string& name) {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/";
}

using ::shapeshift::testing::ReadNumbered;

// The largest |a - b|; infinity when the shapes or dtypes differ or either
// side holds a NaN (a NaN must never pass as "close").
double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double d = std::abs(a.GetAsDouble(i) - b.GetAsDouble(i));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

double MaxAbsDiff(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, MaxAbsDiff(got[i], want[i]));
  return worst;
}

// One request's dims, in the exports' dim names (peer_inputs.py).
struct RequestShape {
  int64_t batch = 1;
  int64_t sequence = 1;
  int64_t past = 0;             // past_sequence (models with past only)
  int64_t decoder_sequence = 1; // seq2seq only
  bool padded = false;          // rows after the first end in padding

  std::string ToString() const {
    return absl::StrCat("batch=", batch, " sequence=", sequence, " past_sequence=", past,
                        " decoder_sequence=", decoder_sequence, padded ? " (padded)" : "");
  }
};

// 20 requests of 20 different lengths (for past models the total length,
// past_sequence + sequence: 10 decode steps, one token after a cache of
// length - 1, and 10 prefills after a cache of 1..4), batch 1..3, every
// other request with batch > 1 padded; seq2seq decoder lengths 1..33.
std::vector<RequestShape> TwentyShapes(bool with_past) {
  const int64_t lengths[kLengths] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24, 31, 33, 40, 48, 63, 64, 65, 100};
  std::vector<RequestShape> shapes;
  for (int i = 0; i < kLengths; ++i) {
    RequestShape shape;
    shape.batch = 1 + i % 3;
    if (with_past) {
      const int64_t total = lengths[i] + 2;  // 3..102: a cache of at least 1 and a new token
      shape.past = i % 2 == 0 ? total - 1 : 1 + i % 4;
      shape.sequence = total - shape.past;
    } else {
      shape.sequence = lengths[i];
    }
    shape.decoder_sequence = std::max<int64_t>(1, lengths[kLengths - 1 - i] / 3);
    shape.padded = shape.batch > 1 && i % 2 == 1 && shape.sequence > 2;
    shapes.push_back(shape);
  }
  return shapes;
}

// Inputs for `shape`, made from the model's own input types: token ids for
// *input_ids, a mask of ones (a padded tail in rows after the first) for
// attention_mask, segment ids 0/1 for token_type_ids, N(0, 1) floats for past
// keys and values. An input the test cannot fill is an error naming it.
absl::StatusOr<std::vector<Tensor>> MakeInputs(const Graph& graph, const RequestShape& shape, uint32_t seed) {
  Assignment dims = {{"batch", shape.batch},
                     {"sequence", shape.sequence},
                     {"past_sequence", shape.past},
                     {"decoder_sequence", shape.decoder_sequence}};
  std::mt19937 rng(seed);
  std::vector<Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    absl::StatusOr<std::vector<int64_t>> dims_of = input->type().Evaluate(dims);
    if (!dims_of.ok()) return absl::InvalidArgumentError(absl::StrCat(input->name(), ": ", dims_of.status().message()));
    const std::vector<int64_t>& s = *dims_of;
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    const std::string& name = input->name();
    if (input->type().dtype == DType::kF32) {
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> v(n);
      for (float& x : v) x = normal(rng);
      inputs.push_back(Tensor::FromVector<float>(DType::kF32, s, v));
      continue;
    }
    if (input->type().dtype != DType::kI64 || s.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "' ", input->type().ToString(),
                                                     ": the zoo test only fills 2-D int64 ids/masks and f32"));
    }
    std::vector<int64_t> v(n);
    const int64_t rows = s[0], cols = s[1];
    if (name.size() >= 9 && name.compare(name.size() - 9, 9, "input_ids") == 0) {
      for (int64_t& x : v) x = 5 + static_cast<int64_t>(rng() % (kVocab - 5));
    } else if (name == "attention_mask") {
      for (int64_t r = 0; r < rows; ++r) {
        // The padded tail covers new tokens only, never the whole row.
        int64_t valid = cols;
        if (shape.padded && r > 0) valid = cols - 1 - static_cast<int64_t>(rng() % (shape.sequence - 1));
        for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = c < valid ? 1 : 0;
      }
    } else if (name == "token_type_ids") {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = c >= cols / 2 ? 1 : 0;
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': the zoo test does not know what it holds"));
    }
    inputs.push_back(Tensor::FromVector<int64_t>(DType::kI64, s, v));
  }
  return inputs;
}

// What kZooExportsFailingToday recorded for `name` ("" when it is not there),
// printed next to a failure so that a changed error is visible.
std::string RecordedError(const std::string& name) {
  for (const FailingExport& e : kZooExportsFailingToday) {
    if (name == e.dir) return absl::StrCat("\n(recorded in kZooExportsFailingToday: ", e.error_today, ")");
  }
  return "";
}

// A past export's first generation step: an empty cache (past_sequence = 0,
// the importer's default lower bound for a cache dim, graph/onnx/cache_dims.h)
// and the prompt of its no-past sibling's data sets 0 and 1 (1 x 5, 2 x 37
// padded; the same weights, bench/peers/export_models.py). The logits must be
// ONNX Runtime's for the sibling, every output the interpreter's. Returns the
// requests made.
int ExpectEmptyCachePrefillsMatchTheSibling(const std::string& name, const Graph& reference, Session& session) {
  const size_t past = name.find("-past");
  const std::string sibling = ModelDir(name.substr(0, past) + name.substr(past + 5));
  int requests = 0;
  for (int set : {0, 1}) {
    const std::string set_dir = sibling + "test_data_set_" + std::to_string(set) + "/";
    std::vector<Tensor> prompt = ReadNumbered(set_dir, "input");     // input_ids, attention_mask
    std::vector<Tensor> expected = ReadNumbered(set_dir, "output");  // logits
    EXPECT_EQ(prompt.size(), 2u) << set_dir;
    EXPECT_EQ(expected.size(), 1u) << set_dir;
    if (prompt.size() != 2 || expected.empty()) return requests;
    const Assignment dims = {{"batch", prompt[0].shape()[0]}, {"sequence", prompt[0].shape()[1]}, {"past_sequence", 0}};
    std::vector<Tensor> inputs;
    for (const Value* input : reference.inputs()) {
      if (input->name() == "input_ids" || input->name() == "attention_mask") {
        inputs.push_back(input->name() == "input_ids" ? prompt[0] : prompt[1]);
        continue;
      }
      absl::StatusOr<std::vector<int64_t>> shape = input->type().Evaluate(dims);
      EXPECT_TRUE(shape.ok()) << input->name() << ": " << shape.status();
      if (!shape.ok()) return requests;
      inputs.push_back(Tensor::FromVector<float>(DType::kF32, *shape, {}));  // [batch, heads, 0, head_dim]
    }
    absl::StatusOr<std::vector<Tensor>> got = session.Run(inputs);
    ++requests;
    EXPECT_TRUE(got.ok()) << name << ", empty cache, " << set_dir << ": " << got.status();
    if (!got.ok()) continue;
    const double vs_ort = MaxAbsDiff((*got)[0], expected[0]);
    EXPECT_LE(vs_ort, kMaxAbsDiff) << name << ", empty cache: logits against ONNX Runtime on " << set_dir;
    absl::StatusOr<std::vector<Tensor>> want = Interpret(reference, inputs);
    EXPECT_TRUE(want.ok()) << want.status();
    if (want.ok()) EXPECT_LE(MaxAbsDiff(*got, *want), kMaxAbsDiff) << name << ", empty cache, against the interpreter";
    std::printf("%s, empty cache, prompt of %s: logits max abs diff vs ONNX Runtime %.3g\n", name.c_str(),
                set_dir.c_str(), vs_ort);
  }
  return requests;
}

// Every check of the file's header on one export directory.
void ExpectOneCompileServesEveryShape(const std::string& name) {
  const std::string dir = ModelDir(name);
  const std::string path = dir + "model.onnx";
  const std::string recorded = RecordedError(name);
  // The reference: the interpreter on the model as imported, before any pass.
  absl::StatusOr<ImportedModel> reference = ImportOnnxFile(path);
  ASSERT_TRUE(reference.ok()) << path << ": " << reference.status() << recorded;
  bool with_past = false;
  for (const Value* input : reference->graph->inputs()) with_past |= input->name().rfind("past_key_values", 0) == 0;

  SessionOptions options;  // the default policy (auto), no declared dims, no cache
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile(path), options);
  ASSERT_TRUE(session.ok()) << path << ": " << session.status() << recorded;

  int sets = 0;
  for (int set = 0; set < 16; ++set) {
    const std::string set_dir = dir + "test_data_set_" + std::to_string(set) + "/";
    if (!std::filesystem::exists(set_dir)) continue;
    ++sets;
    std::vector<Tensor> inputs = ReadNumbered(set_dir, "input");
    std::vector<Tensor> expected = ReadNumbered(set_dir, "output");
    ASSERT_FALSE(inputs.empty() || expected.empty()) << set_dir;
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << set_dir << ": " << out.status() << recorded;
    double diff = MaxAbsDiff(*out, expected);
    EXPECT_LE(diff, kMaxAbsDiff) << set_dir << " against ONNX Runtime";
    std::printf("%s: max abs diff vs ONNX Runtime %.3g\n", set_dir.c_str(), diff);
  }
  EXPECT_GE(sets, 3) << "the data sets of " << dir << " are missing";
  const int empty_cache_requests = with_past ? ExpectEmptyCachePrefillsMatchTheSibling(name, *reference->graph, **session) : 0;

  uint32_t seed = 100;
  double worst = 0;
  for (const RequestShape& shape : TwentyShapes(with_past)) {
    absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(*reference->graph, shape, seed++);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(*inputs);
    ASSERT_TRUE(got.ok()) << shape.ToString() << ": " << got.status() << recorded;
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference->graph, *inputs);
    ASSERT_TRUE(want.ok()) << shape.ToString() << ": interpreter: " << want.status();
    double diff = MaxAbsDiff(*got, *want);
    EXPECT_LE(diff, kMaxAbsDiff) << shape.ToString() << " against the interpreter";
    worst = std::max(worst, diff);
  }
  std::printf("%s: %d lengths, max abs diff vs the interpreter %.3g\n", name.c_str(), kLengths, worst);

  (*session)->WaitForTierUps();
  SessionStats stats = (*session)->stats();
  EXPECT_EQ(stats.dispatcher.compiles, 1) << "one compile must serve every shape";
  EXPECT_EQ(stats.dispatcher.misses, 0);
  EXPECT_EQ(stats.requests, sets + empty_cache_requests + kLengths);
}

class ZooModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooModelTest, OneCompileServesTwentyLengthsAndMatchesOnnxRuntime) {
  ExpectOneCompileServesEveryShape(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModelTest, ::testing::ValuesIn(kZooExports),
                         shapeshift::testing::RealExportTestName);

// The failing exports, only when asked for (see the file's header).
std::vector<const char*> FailingExportsWhenAsked() {
  std::vector<const char*> dirs;
  const char* asked = std::getenv("SHAPESHIFT_ZOO_FAILING");
  if (asked == nullptr || std::string(asked) != "1") return dirs;
  for (const FailingExport& e : kZooExportsFailingToday) dirs.push_back(e.dir);
  return dirs;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooModelTest);
INSTANTIATE_TEST_SUITE_P(ZooFailingToday, ZooModelTest, ::testing::ValuesIn(FailingExportsWhenAsked()),
                         shapeshift::testing::RealExportTestName);

// Every zoo export committed is in exactly one of the two lists (so none is
// forgotten), and every listed one is there with its data sets.
TEST(ZooModelListTest, EveryCommittedExportIsListedOnce) {
  std::set<std::string> listed;
  for (const char* dir : kZooExports) EXPECT_TRUE(listed.insert(dir).second) << dir << " listed twice";
  for (const FailingExport& e : kZooExportsFailingToday) {
    EXPECT_TRUE(listed.insert(e.dir).second) << e.dir << " listed twice";
    EXPECT_NE(std::string(e.error_today), "") << e.dir << ": say what it fails with";
  }
  std::set<std::string> known(std::begin(shapeshift::testing::kRealExports),
                              std::end(shapeshift::testing::kRealExports));
  std::set<std::string> committed;
  for (const auto& entry : std::filesystem::directory_iterator(ModelDir(""))) {
    const std::string dir = entry.path().filename().string();
    if (std::filesystem::exists(entry.path() / "model.onnx") && known.count(dir) == 0) committed.insert(dir);
  }
  EXPECT_EQ(listed, committed);
  for (const std::string& dir : listed) {
    EXPECT_TRUE(std::filesystem::exists(ModelDir(dir) + "test_data_set_0/input_0.pb")) << dir;
  }
}

}  // namespace
}  // namespace shapeshift::runtime
