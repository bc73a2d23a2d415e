// KV caches bound in place (runtime/kv_binding.h, runtime/kv_cache.h):
// builtin:gpt2-kv decoded 512 steps in the bound form agrees bit for bit
// with plain ONNX semantics (fresh present tensors fed back), the bound
// steps write only their new positions, buffers grow by power-of-two
// buckets without a compile, and every misuse of a binding is an error
// naming the output.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "examples/models/gpt2.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "runtime/kv_cache.h"
#include "runtime/program.h"
#include "runtime/session.h"
#include "tests/real_exports.h"

namespace shapeshift::runtime {
namespace {

using examples::Gpt2Config;

struct Compiled {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
  std::unique_ptr<Program> program;
};

Gpt2Config SmallKv() {
  Gpt2Config config;
  config.kv_cache = true;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 2;
  config.vocab = 512;
  return config;
}

Compiled CompileGpt2(const Gpt2Config& config) {
  absl::StatusOr<ImportedModel> model = examples::BuildGpt2(config);
  EXPECT_TRUE(model.ok()) << model.status();
  Compiled c{std::move(model->graph), std::move(model->env), nullptr};
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*c.graph, *c.env, CompileOptions{});
  EXPECT_TRUE(program.ok()) << program.status();
  if (program.ok()) c.program = *std::move(program);
  return c;
}

std::vector<int64_t> EmptyCacheShape(const Gpt2Config& config) {
  return {1, config.heads, 0, config.hidden / config.heads};
}

int64_t Argmax(const Tensor& logits) {
  const int64_t vocab = logits.shape()[2];
  const float* row = logits.data<float>() + (logits.shape()[1] - 1) * vocab;
  return std::max_element(row, row + vocab) - row;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

TEST(KvCacheTest, EveryPresentOfGpt2IsABindablePair) {
  Gpt2Config config = SmallKv();
  Compiled c = CompileGpt2(config);
  ASSERT_NE(c.program, nullptr);
  const std::vector<KvPairInfo>& pairs = c.program->kv_pairs();
  ASSERT_EQ(pairs.size(), 2 * static_cast<size_t>(config.layers));
  EXPECT_EQ(pairs[0].input, "past_key_0");
  EXPECT_EQ(pairs[0].output, "present_key_0");
  EXPECT_EQ(pairs[1].output, "present_value_0");
  for (const KvPairInfo& pair : pairs) {
    EXPECT_TRUE(pair.bindable()) << pair.output << ": " << pair.why_not;
    EXPECT_EQ(pair.axis, 2);
    EXPECT_EQ(c.graph->inputs()[pair.input_index]->name(), pair.input);
    EXPECT_EQ(c.graph->outputs()[pair.output_index]->name(), pair.output);
  }
}

// Greedy decode from one prompt token for 512 steps (past 0..511, the
// declared range), once with fresh presents fed back and once bound: the
// logits of every step and the final caches are the same bytes.
TEST(KvCacheTest, BoundDecodeAgreesBitForBitWithPlainDecodeOver512Steps) {
  Gpt2Config config = SmallKv();
  Compiled c = CompileGpt2(config);
  ASSERT_NE(c.program, nullptr);
  const size_t num_inputs = c.graph->inputs().size();
  absl::StatusOr<KvCache> cache = KvCache::Create(c.program->kv_pairs(), EmptyCacheShape(config), 16);
  ASSERT_TRUE(cache.ok()) << cache.status();

  ExecutionContext plain_ctx, bound_ctx;
  std::vector<Tensor> plain_caches;
  for (size_t i = 1; i < num_inputs; ++i) {
    plain_caches.push_back(Tensor::FromVector(DType::kF32, EmptyCacheShape(config), std::vector<float>{}));
  }
  int64_t plain_token = 7, bound_token = 7;
  std::vector<int64_t> plain_written, bound_written;
  for (int step = 0; step < 512; ++step) {
    // Plain ONNX semantics.
    std::vector<Tensor> plain_inputs = {Tensor::FromVector(DType::kI64, {1, 1}, std::vector<int64_t>{plain_token})};
    for (Tensor& t : plain_caches) plain_inputs.push_back(std::move(t));
    TensorViewList plain_views(plain_inputs);
    absl::StatusOr<std::vector<Tensor>> plain = c.program->Run(plain_views.span(), plain_ctx);
    ASSERT_TRUE(plain.ok()) << "step " << step << ": " << plain.status();
    plain_written.push_back(plain_ctx.output_bytes_written());
    // Bound.
    std::vector<int64_t> ids = {bound_token};
    std::vector<int64_t> ids_shape = {1, 1};
    std::vector<TensorView> inputs(num_inputs);
    inputs[0] = TensorView{DType::kI64, ids_shape, ids.data()};
    ASSERT_TRUE(cache->Prepare(1, inputs).ok());
    absl::StatusOr<std::vector<Tensor>> bound = c.program->Run(inputs, bound_ctx, cache->bindings());
    ASSERT_TRUE(bound.ok()) << "step " << step << ": " << bound.status();
    cache->Advance(1);
    bound_written.push_back(bound_ctx.output_bytes_written());

    ASSERT_TRUE(SameBits((*plain)[0], (*bound)[0])) << "logits differ at step " << step;
    for (size_t i = 1; i < bound->size(); ++i) EXPECT_EQ((*bound)[i].num_elements(), 0) << "a bound output is a placeholder";
    plain_token = Argmax((*plain)[0]);
    bound_token = Argmax((*bound)[0]);
    plain_caches.assign(std::make_move_iterator(plain->begin() + 1), std::make_move_iterator(plain->end()));
  }
  EXPECT_EQ(cache->length(), 512);
  for (size_t i = 0; i < plain_caches.size(); ++i) {
    const std::string& name = c.graph->outputs()[i + 1]->name();
    absl::StatusOr<Tensor> dense = cache->Dense(name);
    ASSERT_TRUE(dense.ok()) << dense.status();
    EXPECT_TRUE(SameBits(*dense, plain_caches[i])) << name << " differs after 512 steps";
  }
  // Bytes written per step: the logits plus one new position per cache when
  // bound, whatever the length; the whole caches under plain semantics.
  const int64_t logits = config.vocab * 4;
  const int64_t position = static_cast<int64_t>(plain_caches.size()) * config.hidden * 4;
  for (int step = 0; step < 512; ++step) {
    EXPECT_EQ(bound_written[step], logits + position) << "step " << step;
    EXPECT_EQ(plain_written[step], logits + (step + 1) * position) << "step " << step;
  }
  // 16 → 32 → ... → 512: five growths, each at a full buffer.
  ASSERT_EQ(cache->growths().size(), 5u);
  EXPECT_EQ(cache->growths()[0].from, 16);
  EXPECT_EQ(cache->growths()[0].to, 32);
  EXPECT_EQ(cache->growths()[0].length, 16);
  EXPECT_EQ(cache->growths().back().to, 512);
  EXPECT_EQ(cache->capacity(), 512);
}

// A prompt of several tokens (the prefill) bound, then decode steps; through
// a Session under the default policy, one compile.
TEST(KvCacheTest, BoundPrefillThenDecodeThroughASessionMatchesPlain) {
  Gpt2Config config = SmallKv();
  absl::StatusOr<ImportedModel> model = examples::BuildGpt2(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)),
                      SessionOptions{.policy = SpecializationPolicy::kPolymorphic});
  ASSERT_TRUE(session.ok()) << session.status();
  const Program* program = (*session)->program();
  ASSERT_NE(program, nullptr);
  absl::StatusOr<KvCache> cache = KvCache::Create(program->kv_pairs(), EmptyCacheShape(config), 4);
  ASSERT_TRUE(cache.ok()) << cache.status();
  const size_t num_inputs = (*session)->graph().inputs().size();
  std::vector<Tensor> plain_caches;
  for (size_t i = 1; i < num_inputs; ++i) {
    plain_caches.push_back(Tensor::FromVector(DType::kF32, EmptyCacheShape(config), std::vector<float>{}));
  }
  std::vector<int64_t> ids = {3, 141, 59, 265, 35};
  for (int step = 0; step < 12; ++step) {
    const int64_t seq = static_cast<int64_t>(ids.size());
    std::vector<Tensor> plain_inputs = {Tensor::FromVector(DType::kI64, {1, seq}, ids)};
    for (Tensor& t : plain_caches) plain_inputs.push_back(std::move(t));
    absl::StatusOr<std::vector<Tensor>> plain = (*session)->Run(plain_inputs);
    ASSERT_TRUE(plain.ok()) << plain.status();
    std::vector<int64_t> shape = {1, seq};
    std::vector<TensorView> inputs(num_inputs);
    inputs[0] = TensorView{DType::kI64, shape, ids.data()};
    ASSERT_TRUE(cache->Prepare(seq, inputs).ok());
    absl::StatusOr<std::vector<Tensor>> bound = (*session)->Run(inputs, cache->bindings());
    ASSERT_TRUE(bound.ok()) << bound.status();
    cache->Advance(seq);
    ASSERT_TRUE(SameBits((*plain)[0], (*bound)[0])) << "step " << step;
    ids = {Argmax((*bound)[0])};
    plain_caches.assign(std::make_move_iterator(plain->begin() + 1), std::make_move_iterator(plain->end()));
  }
  EXPECT_EQ((*session)->stats().compiles, 1);
  EXPECT_EQ(cache->length(), 16);
}

class KvBindingErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_ = CompileGpt2(config_);
    ASSERT_NE(c_.program, nullptr);
    num_inputs_ = c_.graph->inputs().size();
    position_ = config_.hidden / config_.heads;  // floats per position per head
  }
  // A request of one new token on caches of `past` positions, every pair
  // bound to its own buffer of `capacity` positions.
  absl::StatusOr<std::vector<Tensor>> RunWith(int64_t past, int64_t capacity, std::vector<BoundCache> caches,
                                              std::vector<TensorView>* override_inputs = nullptr,
                                              const std::function<void(std::vector<float>&)>& fill = nullptr) {
    buffers_.assign(num_inputs_ - 1, std::vector<float>(config_.heads * capacity * position_, 0.0f));
    if (fill) {
      for (std::vector<float>& buffer : buffers_) fill(buffer);
    }
    past_shape_ = {1, config_.heads, past, position_};
    std::vector<TensorView> inputs(num_inputs_);
    inputs[0] = TensorView{DType::kI64, ids_shape_, ids_.data()};
    for (size_t i = 1; i < num_inputs_; ++i) inputs[i] = TensorView{DType::kF32, past_shape_, buffers_[i - 1].data()};
    if (caches.empty()) {
      for (size_t i = 1; i < num_inputs_; ++i) {
        caches.push_back(BoundCache{c_.graph->outputs()[i]->name(), absl::MakeSpan(buffers_[i - 1]), capacity});
      }
    }
    if (override_inputs != nullptr) {
      for (size_t i = 0; i < override_inputs->size(); ++i) {
        if ((*override_inputs)[i].data != nullptr) inputs[i] = (*override_inputs)[i];
      }
    }
    return c_.program->Run(inputs, ctx_, caches);
  }
  Gpt2Config config_ = SmallKv();
  Compiled c_;
  size_t num_inputs_ = 0;
  int64_t position_ = 0;
  std::vector<std::vector<float>> buffers_;
  std::vector<int64_t> past_shape_;
  std::vector<int64_t> ids_ = {5};
  std::vector<int64_t> ids_shape_ = {1, 1};
  ExecutionContext ctx_;
};

// The step writes its one new position at position `past` of every row
// (batch × head) of the buffer, and nothing else: the past stays as it was,
// the room after the new position keeps its sentinel.
TEST_F(KvBindingErrorsTest, AStepWritesOnlyItsNewPositionIntoTheBuffer) {
  const int64_t past = 3, capacity = 8;
  std::vector<std::vector<float>> before;
  absl::StatusOr<std::vector<Tensor>> r = RunWith(past, capacity, {}, nullptr, [&](std::vector<float>& buffer) {
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i % 97) * 0.01f;
    for (int64_t h = 0; h < config_.heads; ++h) {
      for (int64_t t = past; t < capacity; ++t) {
        std::fill_n(buffer.begin() + (h * capacity + t) * position_, position_, std::nanf(""));
      }
    }
    before.push_back(buffer);
  });
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t b = 0; b < buffers_.size(); ++b) {
    for (int64_t h = 0; h < config_.heads; ++h) {
      for (int64_t t = 0; t < capacity; ++t) {
        for (int64_t d = 0; d < position_; ++d) {
          const size_t i = static_cast<size_t>((h * capacity + t) * position_ + d);
          if (t < past) {
            ASSERT_EQ(buffers_[b][i], before[b][i]) << "the past changed: buffer " << b << " head " << h << " pos " << t;
          } else if (t == past) {
            ASSERT_FALSE(std::isnan(buffers_[b][i])) << "the new position is missing: buffer " << b << " head " << h;
          } else {
            ASSERT_TRUE(std::isnan(buffers_[b][i])) << "written beyond the new position: buffer " << b << " pos " << t;
          }
        }
      }
    }
  }
}

TEST_F(KvBindingErrorsTest, TooLittleCapacityNamesTheOutput) {
  absl::StatusOr<std::vector<Tensor>> r = RunWith(8, 8, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("'present_key_0' needs 9 positions but its buffer has capacity 8"),
            std::string::npos)
      << r.status();
}

TEST_F(KvBindingErrorsTest, ABufferSmallerThanItsCapacityIsRefused) {
  buffers_.assign(1, std::vector<float>(10));
  std::vector<float> small(10);
  absl::StatusOr<std::vector<Tensor>> r =
      RunWith(0, 8, {BoundCache{"present_key_0", absl::MakeSpan(small), 8}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'present_key_0' needs a buffer of 512 floats for capacity 8, got 10"),
            std::string::npos)
      << r.status();
}

TEST_F(KvBindingErrorsTest, UnknownAndNonCacheOutputsAreRefused) {
  std::vector<float> buffer(4096);
  absl::StatusOr<std::vector<Tensor>> unknown = RunWith(0, 8, {BoundCache{"present_nothing", absl::MakeSpan(buffer), 8}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no output 'present_nothing'"), std::string::npos) << unknown.status();
  absl::StatusOr<std::vector<Tensor>> logits = RunWith(0, 8, {BoundCache{"logits", absl::MakeSpan(buffer), 8}});
  ASSERT_FALSE(logits.ok());
  EXPECT_NE(logits.status().message().find("output 'logits' is not a KV cache"), std::string::npos) << logits.status();
}

TEST_F(KvBindingErrorsTest, APastThatIsNotAViewOfItsBufferIsRefused) {
  std::vector<float> elsewhere(config_.heads * 3 * position_);
  std::vector<int64_t> shape = {1, config_.heads, 3, position_};
  std::vector<TensorView> inputs(num_inputs_);
  inputs[1] = TensorView{DType::kF32, shape, elsewhere.data()};
  absl::StatusOr<std::vector<Tensor>> r = RunWith(3, 8, {}, &inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'past_key_0' must be a view of the buffer bound to 'present_key_0'"),
            std::string::npos)
      << r.status();
}

TEST_F(KvBindingErrorsTest, TwiceBoundAndOverlappingBuffersAreRefused) {
  std::vector<float> buffer(2 * config_.heads * 8 * position_);
  absl::Span<float> all = absl::MakeSpan(buffer);
  absl::StatusOr<std::vector<Tensor>> twice = RunWith(
      0, 8, {BoundCache{"present_key_0", all, 8}, BoundCache{"present_key_0", all, 8}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'present_key_0' is bound twice"), std::string::npos) << twice.status();
  absl::StatusOr<std::vector<Tensor>> overlap = RunWith(
      0, 8, {BoundCache{"present_key_0", all, 8}, BoundCache{"present_value_0", all.subspan(8), 8}});
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.status().message().find("overlap"), std::string::npos) << overlap.status();
}

TEST(KvCacheCreateTest, RefusesBadArguments) {
  EXPECT_FALSE(KvCache::Create({}, {1, 2, 0, 4}).ok());
  KvPairInfo unbindable{"past", "present", 1, 1, 2, "group #3 (kernel 'x') reads or writes it as a dense tensor"};
  absl::StatusOr<KvCache> refused = KvCache::Create({unbindable}, {1, 2, 0, 4});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'present' cannot be bound: group #3"), std::string::npos);
  KvPairInfo ok{"past", "present", 1, 1, 2, ""};
  EXPECT_FALSE(KvCache::Create({ok}, {1, 2}).ok());  // axis outside the shape
  EXPECT_FALSE(KvCache::Create({ok}, {1, 2, 0, 4}, 0).ok());
  absl::StatusOr<KvCache> capped = KvCache::Create({ok}, {1, 2, 0, 4}, 4, 8);
  ASSERT_TRUE(capped.ok());
  std::vector<TensorView> inputs(2);
  EXPECT_TRUE(capped->Prepare(8, inputs).ok());
  capped->Advance(8);
  absl::Status over = capped->Prepare(1, inputs);
  EXPECT_EQ(over.code(), absl::StatusCode::kOutOfRange) << over;
}

// The exported decoders with past (tests/data/models): each present is
// Concat(past, new positions) and bindable in place, and 40 greedy decode
// steps from an empty cache bound agree bit for bit with plain ONNX
// semantics. (TorchScript's GPT-2 writes layer 0's key through a one-input
// Concat, and dynamo's GPT-2 reads Kᵀ through Reshape, Transpose, Reshape:
// simplify removes both, else `run` names the kernel that keeps the cache
// from binding. BLOOM's attention reads [batch*heads, positions, head_dim]
// views of its caches: a view merging leading dims reads a bound cache too.)
class ExportedKvPairsTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string path = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + GetParam() + "/model.onnx";
    ImportOptions options;
    options.dim_ranges = {{"batch", {1, 4}}, {"sequence", {1, 64}}, {"past_sequence", {0, 128}}};
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(path, options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    absl::StatusOr<std::unique_ptr<Program>> program =
        Program::Compile(*model_.graph, *model_.env, CompileOptions{});
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = *std::move(program);
  }
  ImportedModel model_;
  std::unique_ptr<Program> program_;
};

TEST_P(ExportedKvPairsTest, EveryPresentIsABindablePair) {
  const std::vector<KvPairInfo>& pairs = program_->kv_pairs();
  ASSERT_EQ(pairs.size(), 4u);  // key and value of 2 layers
  for (const KvPairInfo& pair : pairs) {
    EXPECT_TRUE(pair.bindable()) << pair.output << ": " << pair.why_not;
    EXPECT_EQ(pair.axis, 2);
  }
}

// Under plain semantics the past is copied by the fused attention that
// reads the present (one pass over the past; cpu::PastCopy), wherever the
// program has one: every export but BLOOM's and MPT's, whose ALiBi
// attention runs as GEMMs that read the Concat's copy. The bit-for-bit
// test below then checks that copy and the attention's reads of the past.
TEST_P(ExportedKvPairsTest, PlainDecodeCopiesThePastInTheAttentionThatReadsIt) {
  const bool fused = program_->stats().attention_calls > 0;
  EXPECT_EQ(fused, std::string(GetParam()).find("bloom") != 0 && std::string(GetParam()).find("mpt") != 0);
  for (const KvPairInfo& pair : program_->kv_pairs()) {
    EXPECT_EQ(pair.past_copied_by_attention, fused) << pair.output;
  }
}

TEST_P(ExportedKvPairsTest, BoundDecodeAgreesBitForBitWithPlainDecode) {
  const std::vector<Value*>& graph_inputs = model_.graph->inputs();
  ASSERT_EQ(graph_inputs.size(), 6u);  // input_ids, attention_mask, 4 caches
  ASSERT_EQ(graph_inputs[1]->name(), "attention_mask");
  const std::vector<SymExpr>& past = graph_inputs[2]->type().shape;  // [batch, kv heads, past, head dim]
  ASSERT_TRUE(past[1].IsConst() && past[3].IsConst());
  const std::vector<int64_t> empty = {1, *past[1].AsConst(), 0, *past[3].AsConst()};
  absl::StatusOr<KvCache> cache = KvCache::Create(program_->kv_pairs(), empty, 8);
  ASSERT_TRUE(cache.ok()) << cache.status();
  ExecutionContext plain_ctx, bound_ctx;
  std::vector<Tensor> plain_caches;
  for (int i = 0; i < 4; ++i) plain_caches.push_back(Tensor::FromVector(DType::kF32, empty, std::vector<float>{}));
  int64_t plain_token = 7, bound_token = 7;
  for (int step = 0; step < 40; ++step) {
    const std::vector<int64_t> mask_shape = {1, step + 1};
    const std::vector<int64_t> mask(step + 1, 1);
    std::vector<Tensor> plain_inputs = {Tensor::FromVector(DType::kI64, {1, 1}, std::vector<int64_t>{plain_token}),
                                        Tensor::FromVector(DType::kI64, mask_shape, mask)};
    for (Tensor& t : plain_caches) plain_inputs.push_back(std::move(t));
    TensorViewList plain_views(plain_inputs);
    absl::StatusOr<std::vector<Tensor>> plain = program_->Run(plain_views.span(), plain_ctx);
    ASSERT_TRUE(plain.ok()) << "step " << step << ": " << plain.status();

    std::vector<int64_t> ids = {bound_token};
    const std::vector<int64_t> ids_shape = {1, 1};
    std::vector<TensorView> inputs(graph_inputs.size());
    inputs[0] = TensorView{DType::kI64, ids_shape, ids.data()};
    inputs[1] = TensorView{DType::kI64, mask_shape, mask.data()};
    ASSERT_TRUE(cache->Prepare(1, inputs).ok());
    absl::StatusOr<std::vector<Tensor>> bound = program_->Run(inputs, bound_ctx, cache->bindings());
    ASSERT_TRUE(bound.ok()) << "step " << step << ": " << bound.status();
    cache->Advance(1);

    ASSERT_TRUE(SameBits((*plain)[0], (*bound)[0])) << "logits differ at step " << step;
    plain_token = Argmax((*plain)[0]);
    bound_token = Argmax((*bound)[0]);
    plain_caches.assign(std::make_move_iterator(plain->begin() + 1), std::make_move_iterator(plain->end()));
  }
  for (size_t i = 0; i < plain_caches.size(); ++i) {
    const std::string& name = model_.graph->outputs()[i + 1]->name();
    absl::StatusOr<Tensor> dense = cache->Dense(name);
    ASSERT_TRUE(dense.ok()) << dense.status();
    EXPECT_TRUE(SameBits(*dense, plain_caches[i])) << name << " differs after 40 steps";
  }
  EXPECT_EQ(cache->growths().size(), 3u);  // 8 -> 16 -> 32 -> 64
}

INSTANTIATE_TEST_SUITE_P(Exports, ExportedKvPairsTest,
                         ::testing::ValuesIn(shapeshift::testing::kPastExports),
                         shapeshift::testing::RealExportTestName);

}  // namespace
}  // namespace shapeshift::runtime
