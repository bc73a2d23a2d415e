// Lists of the torch-exported tiny models committed under tests/data/models/,
// for the suites that run each of them: kRealExports, the ten peer models
// (five architectures × the TorchScript and dynamo exporters; passes: the
// pipeline; runtime: a Session against torch eager's outputs), and
// kPastExports, every decoder export with past key/values.
#ifndef SHAPESHIFT_TESTS_REAL_EXPORTS_H_
#define SHAPESHIFT_TESTS_REAL_EXPORTS_H_

#include <string>

#include "gtest/gtest.h"

namespace shapeshift::testing {

inline constexpr const char* kRealExports[] = {
    "bert-base-torchscript",  "bert-base-dynamo",  "distilbert-torchscript", "distilbert-dynamo",
    "roberta-base-torchscript", "roberta-base-dynamo", "gpt2-torchscript",     "gpt2-dynamo",
    "gpt2-past-torchscript",  "gpt2-past-dynamo"};

// The decoder exports with past key/values (GPT-2's and the zoo's, both
// exporters), for the suites that decode or check their KV caches.
inline constexpr const char* kPastExports[] = {
    "gpt2-past-torchscript",        "gpt2-past-dynamo",        "llama-past-torchscript",    "llama-past-dynamo",
    "qwen2-past-torchscript",       "qwen2-past-dynamo",       "mistral-past-torchscript",  "mistral-past-dynamo",
    "gemma-past-torchscript",       "gemma-past-dynamo",       "phi-past-torchscript",      "phi-past-dynamo",
    "gpt-neox-past-torchscript",    "gpt-neox-past-dynamo",    "stablelm-past-torchscript", "stablelm-past-dynamo",
    "falcon-past-torchscript",      "falcon-past-dynamo",      "gpt-bigcode-past-torchscript",
    "gpt-bigcode-past-dynamo",      "bloom-past-torchscript",  "bloom-past-dynamo",       "mpt-past-torchscript"};

// The exports whose relative positions (T5's bias buckets, DeBERTa-v2's
// position indices) relative-position-recognition rewrites, both exporters.
inline constexpr const char* kRelativePositionExports[] = {"t5-encoder-torchscript", "t5-encoder-dynamo",
                                                           "deberta-v2-torchscript", "deberta-v2-dynamo"};

// A gtest-legal name for the export directory `info.param` ('-' → '_').
inline std::string RealExportTestName(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_REAL_EXPORTS_H_
