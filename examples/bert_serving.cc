// bert_serving: the public C++ API on variable-length requests.
//
// Builds the example BERT encoder (examples/models/bert.h), compiles it once
// for batch 1..8 × seq 1..512 with runtime::Session, then serves requests of
// different lengths from the caller's own buffers through borrowed
// TensorViews (no copy into owning tensors), and shows that a request outside
// the declared ranges is refused with a clear error instead of recompiling.
//
//   build/examples/bert_serving [num_requests]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "examples/models/bert.h"
#include "runtime/session.h"

namespace {

using shapeshift::DType;
using shapeshift::runtime::ModelSource;
using shapeshift::runtime::Session;
using shapeshift::runtime::TensorView;

// A tokenized request as a serving front end would hold it.
struct Request {
  int64_t batch;
  int64_t seq;
  std::vector<int64_t> ids;
  std::vector<int64_t> mask;
};

Request MakeRequest(int64_t batch, int64_t seq, int64_t vocab, uint64_t salt) {
  Request r{batch, seq, std::vector<int64_t>(batch * seq), std::vector<int64_t>(batch * seq, 1)};
  for (int64_t i = 0; i < batch * seq; ++i) r.ids[i] = static_cast<int64_t>((i * 2654435761u + salt) % vocab);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int num_requests = argc > 1 ? std::atoi(argv[1]) : 12;
  shapeshift::examples::BertConfig config;  // 4 layers, hidden 256, 4 heads; batch 1..8, seq 1..512
  auto model = shapeshift::examples::BuildBert(config);
  if (!model.ok()) {
    std::fprintf(stderr, "build: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto session = Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)));
  if (!session.ok()) {
    std::fprintf(stderr, "compile: %s\n", session.status().ToString().c_str());
    return 1;
  }
  std::printf("compiled once in %.1f ms: %lld kernels, %lld GEMM primitives\n",
              (*session)->stats().program.compile_ms, static_cast<long long>((*session)->stats().program.kernels),
              static_cast<long long>((*session)->stats().program.gemms));

  const int64_t lengths[] = {1, 7, 16, 33, 64, 128, 211, 512};
  for (int i = 0; i < num_requests; ++i) {
    int64_t batch = i % 3 == 2 ? 4 : 1;
    int64_t seq = lengths[i % 8];
    Request request = MakeRequest(batch, seq, config.vocab, i);
    const int64_t shape[] = {batch, seq};
    std::vector<TensorView> inputs = {TensorView{DType::kI64, shape, request.ids.data()},
                                      TensorView{DType::kI64, shape, request.mask.data()}};
    auto start = std::chrono::steady_clock::now();
    auto outputs = (*session)->Run(inputs);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!outputs.ok()) {
      std::fprintf(stderr, "request %d: %s\n", i, outputs.status().ToString().c_str());
      return 1;
    }
    const shapeshift::Tensor& hidden = (*outputs)[0];
    std::printf("request %2d: batch %lld seq %3lld -> last_hidden_state [%lld, %lld, %lld] in %8.0f us"
                " (first value %.4f)\n",
                i, static_cast<long long>(batch), static_cast<long long>(seq),
                static_cast<long long>(hidden.shape()[0]), static_cast<long long>(hidden.shape()[1]),
                static_cast<long long>(hidden.shape()[2]), us, hidden.data<float>()[0]);
  }

  Request too_long = MakeRequest(1, 513, config.vocab, 0);
  const int64_t shape[] = {1, 513};
  auto refused = (*session)->Run({TensorView{DType::kI64, shape, too_long.ids.data()},
                                  TensorView{DType::kI64, shape, too_long.mask.data()}});
  std::printf("seq 513 (outside 1..512): %s\n", refused.ok() ? "accepted?!" : refused.status().ToString().c_str());
  std::printf("compiles: %lld, requests served: %lld\n", static_cast<long long>((*session)->stats().compiles),
              static_cast<long long>((*session)->stats().requests));
  return refused.ok() ? 1 : 0;
}
