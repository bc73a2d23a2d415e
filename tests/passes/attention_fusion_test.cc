// Fusion's attention groups (passes/internal/attention_groups.h) on the
// torch-exported tiny models: which attentions become one kAttention group,
// with which layouts, scale, mask and causal fields (decoders with past read
// their presents in place; grouped-query attention through its views) — and which stay unfused (an ALiBi bias, T5's
// relative positions), and that FusionOptions{fuse_attention = false} plans exactly
// what it did before.
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/onnx/importer.h"
#include "passes/pipeline.h"

namespace shapeshift::passes {
namespace {

struct Planned {
  ImportedModel model;
  PipelineResult result;
};

Planned Plan(const std::string& name, bool fuse_attention) {
  ImportOptions options;
  options.dim_ranges = {{"batch", {1, 8}}, {"sequence", {1, 256}}};
  if (name.find("past") != std::string::npos) options.dim_ranges["past_sequence"] = {1, 256};
  Planned p;
  absl::StatusOr<ImportedModel> model =
      ImportOnnxFile(std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/" + name + "/model.onnx", options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return p;
  p.model = *std::move(model);
  PipelineOptions pipeline;
  pipeline.fuse_attention = fuse_attention;
  absl::StatusOr<PipelineResult> result = RunPipeline(*p.model.graph, *p.model.env, pipeline);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) p.result = *std::move(result);
  return p;
}

std::vector<const Group*> Attentions(const FusionPlan& plan) {
  std::vector<const Group*> found;
  for (const Group& g : plan.groups) {
    if (g.kind == GroupKind::kAttention) found.push_back(&g);
  }
  return found;
}

int CountKind(const FusionPlan& plan, GroupKind kind) {
  int n = 0;
  for (const Group& g : plan.groups) n += g.kind == kind;
  return n;
}

// Each layer's attention, with every head transpose around it, is one group
// that reads Q, K, V as [b, S, h, d] and writes [b, S, h, d]. With
// `fused_qkv` (GPT-2's one projection split three ways), Q, K and V are read
// in place from the projection's [b, S, 3·h·d] output, at its columns 0,
// h·d and 2·h·d: the split's slices and their views are in the group too.
void ExpectEveryLayerFused(const std::string& name, int layers, bool causal, bool fused_qkv = false) {
  SCOPED_TRACE(name);
  Planned p = Plan(name, true);
  std::vector<const Group*> attention = Attentions(p.result.fusion);
  ASSERT_EQ(attention.size(), static_cast<size_t>(layers)) << p.result.fusion.ToString();
  for (const Group* g : attention) {
    const AttentionGroup& a = g->attention;
    EXPECT_TRUE(a.q_seq_major && a.k_seq_major && a.v_seq_major && a.out_seq_major) << g->ToString();
    EXPECT_EQ(a.causal, causal) << g->ToString();
    EXPECT_TRUE(a.nan_to_zero) << g->ToString();  // torch SDPA's Where(IsNaN(p), 0, p)
    EXPECT_NE(a.mask, nullptr) << g->ToString();   // the padding mask
    EXPECT_FLOAT_EQ(a.scale, 0.25f) << g->ToString();  // 1/sqrt(16): the tiny models' head dim
    ASSERT_EQ(g->outputs.size(), 1u);
    EXPECT_EQ(g->outputs[0], a.out);
    // Only the softmax's inputs, Q, K, V (or the tensor they are read from)
    // and constants come in: no scores.
    for (const Value* in : g->inputs) {
      const bool operand = fused_qkv ? in == a.q_source.value : in == a.q || in == a.k || in == a.v;
      EXPECT_TRUE(operand || in == a.mask || in->is_constant()) << in->name();
    }
    if (fused_qkv) {
      ASSERT_NE(a.q_source.value, nullptr) << g->ToString();
      EXPECT_EQ(a.k_source.value, a.q_source.value);
      EXPECT_EQ(a.v_source.value, a.q_source.value);
      const int64_t width = a.q->type().shape[2].AsConst().value() * a.q->type().shape[3].AsConst().value();
      EXPECT_EQ(a.q_source.value->type().shape[2].AsConst(), std::optional<int64_t>(3 * width));
      EXPECT_EQ(a.q_source.offset.AsConst(), std::optional<int64_t>(0));
      EXPECT_EQ(a.k_source.offset.AsConst(), std::optional<int64_t>(width));
      EXPECT_EQ(a.v_source.offset.AsConst(), std::optional<int64_t>(2 * width));
    } else {
      EXPECT_EQ(a.q_source.value, nullptr);
      EXPECT_EQ(a.k_source.value, nullptr);
      EXPECT_EQ(a.v_source.value, nullptr);
    }
  }
  // Nothing of the attention is left outside: no softmax, no batched matmul.
  EXPECT_EQ(CountKind(p.result.fusion, GroupKind::kSoftmax), 0) << p.result.fusion.ToString();
  Planned unfused = Plan(name, false);
  EXPECT_TRUE(Attentions(unfused.result.fusion).empty());
  // Per layer: 2 matmuls, a softmax, the NaN Where and 4 transposes become
  // 1 group (and with fused_qkv, 3 slices and 3 views too).
  EXPECT_EQ(unfused.result.fusion.groups.size(), p.result.fusion.groups.size() + (fused_qkv ? 13 : 7) * layers);
  // The [b, h, S, S] scores, probabilities and NaN-free copy leave the arena.
  const Assignment at = {{"batch", 2}, {"sequence", 200}};
  absl::StatusOr<int64_t> fused_bytes = p.result.memory.arena_bytes.Evaluate(at);
  absl::StatusOr<int64_t> unfused_bytes = unfused.result.memory.arena_bytes.Evaluate(at);
  ASSERT_TRUE(fused_bytes.ok() && unfused_bytes.ok());
  EXPECT_LT(*fused_bytes, *unfused_bytes);
}

TEST(AttentionFusionTest, BertEncodersFuseEveryLayer) {
  ExpectEveryLayerFused("bert-base-torchscript", 2, /*causal=*/false);
  ExpectEveryLayerFused("bert-base-dynamo", 2, /*causal=*/false);
}

TEST(AttentionFusionTest, Gpt2PrefillFusesItsCausalAttention) {
  ExpectEveryLayerFused("gpt2-torchscript", 2, /*causal=*/true, /*fused_qkv=*/true);
  ExpectEveryLayerFused("gpt2-dynamo", 2, /*causal=*/true, /*fused_qkv=*/true);
  Planned p = Plan("gpt2-dynamo", true);
  for (const Group* g : Attentions(p.result.fusion)) {
    EXPECT_FLOAT_EQ(g->attention.fill, -3.40282347e38f) << g->ToString();
    EXPECT_EQ(g->attention.window, 0);
  }
}

TEST(AttentionFusionTest, DecodersWithPastReadTheirPresentsInPlace) {
  for (const char* name : {"gpt2-past-torchscript", "gpt2-past-dynamo"}) {
    Planned p = Plan(name, true);
    std::vector<const Group*> attention = Attentions(p.result.fusion);
    ASSERT_EQ(attention.size(), 2u) << name << "\n" << p.result.fusion.ToString();
    for (const Group* g : attention) {
      // K and V are the Concat's presents ([b, h, T, d]), read where they are.
      for (const Value* kv : {g->attention.k, g->attention.v}) {
        ASSERT_NE(kv->producer(), nullptr);
        EXPECT_EQ(kv->producer()->op_type(), "Concat") << g->ToString();
      }
      EXPECT_FALSE(g->attention.k_seq_major || g->attention.v_seq_major);
      EXPECT_TRUE(g->attention.causal);
    }
  }
}

// Grouped-query attention after the grouped-query matmul pass: Q viewed as
// [b, G, R·S, d] against the unexpanded K and V, the scores and output viewed
// back — the views join the group, and Q, K, V come in with their own heads
// (4 query heads, 2 or 1 key/value heads in the tiny configs).
TEST(AttentionFusionTest, GroupedQueryAttentionFusesThroughItsViews) {
  struct Expect {
    const char* name;
    int64_t kv_heads;
  };
  for (Expect e : {Expect{"llama-torchscript", 2}, Expect{"llama-dynamo", 2}, Expect{"llama-past-dynamo", 2},
                   Expect{"qwen2-torchscript", 2}, Expect{"mistral-dynamo", 2}, Expect{"gemma-torchscript", 1},
                   Expect{"stablelm-past-torchscript", 2}, Expect{"falcon-torchscript", 1},
                   Expect{"gpt-bigcode-past-dynamo", 1}}) {
    SCOPED_TRACE(e.name);
    Planned p = Plan(e.name, true);
    std::vector<const Group*> attention = Attentions(p.result.fusion);
    ASSERT_EQ(attention.size(), 2u) << p.result.fusion.ToString();
    EXPECT_EQ(CountKind(p.result.fusion, GroupKind::kSoftmax), 0);
    for (const Group* g : attention) {
      const AttentionGroup& a = g->attention;
      auto heads = [](const Value* x, bool seq_major) { return x->type().shape[seq_major ? 2 : 1].AsConst(); };
      EXPECT_EQ(heads(a.q, a.q_seq_major), std::optional<int64_t>(4)) << g->ToString();
      EXPECT_EQ(heads(a.k, a.k_seq_major), std::optional<int64_t>(e.kv_heads)) << g->ToString();
      EXPECT_EQ(heads(a.v, a.v_seq_major), std::optional<int64_t>(e.kv_heads)) << g->ToString();
      EXPECT_EQ(heads(a.out, a.out_seq_major), std::optional<int64_t>(4)) << g->ToString();
      EXPECT_TRUE(a.causal) << g->ToString();
      // No [b, G, R·S, T] scores or regrouped probabilities leave the group.
      ASSERT_EQ(g->outputs.size(), 1u);
      EXPECT_EQ(g->outputs[0], a.out);
    }
  }
}

// A grouped-query matmul whose views are read elsewhere (here: the scores
// are also a graph output) is not merged: the kernel never writes them.
TEST(AttentionFusionTest, GroupedScoresReadOutsideStayUnfused) {
  Planned p = Plan("llama-torchscript", true);
  ASSERT_EQ(Attentions(p.result.fusion).size(), 2u);
  // Re-plan with the first layer's scores (the softmax's input) as an output.
  ImportOptions options;
  options.dim_ranges = {{"batch", {1, 8}}, {"sequence", {1, 256}}};
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(
      std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/llama-torchscript/model.onnx", options);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<PipelineResult> first = RunPipeline(*model->graph, *model->env, PipelineOptions{});
  ASSERT_TRUE(first.ok()) << first.status();
  Value* scores = nullptr;
  for (const Group& g : first->fusion.groups) {
    if (g.kind != GroupKind::kAttention || scores != nullptr) continue;
    for (const Node* n : g.nodes) {
      if (n->op_type() == "CausalSoftmax") scores = n->input(0);
    }
  }
  ASSERT_NE(scores, nullptr);
  model->graph->AddOutput(scores);
  absl::StatusOr<PipelineResult> second = RunPipeline(*model->graph, *model->env, PipelineOptions{});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Attentions(second->fusion).size(), 1u) << second->fusion.ToString();
  EXPECT_EQ(CountKind(second->fusion, GroupKind::kSoftmax), 1);
}

TEST(AttentionFusionTest, WhatStaysUnfused) {
  // ALiBi's bias in the softmax; T5's relative positions computed in it.
  for (const char* name : {"bloom-torchscript", "t5-encoder-torchscript"}) {
    Planned p = Plan(name, true);
    EXPECT_TRUE(Attentions(p.result.fusion).empty()) << name;
    EXPECT_GT(CountKind(p.result.fusion, GroupKind::kSoftmax), 0) << name;
  }
}

TEST(AttentionFusionTest, OffPlansAsBefore) {
  Planned p = Plan("bert-base-torchscript", false);
  EXPECT_EQ(CountKind(p.result.fusion, GroupKind::kAttention), 0);
  EXPECT_EQ(CountKind(p.result.fusion, GroupKind::kSoftmax), 2);
}

}  // namespace
}  // namespace shapeshift::passes
