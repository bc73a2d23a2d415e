// The ten torch-exported tiny models committed under tests/data/models/
// (five architectures × the TorchScript and dynamo exporters), as one list
// for the suites that run each of them (passes: the pipeline; runtime: a
// Session against torch eager's outputs).
#ifndef SHAPESHIFT_TESTS_REAL_EXPORTS_H_
#define SHAPESHIFT_TESTS_REAL_EXPORTS_H_

#include <string>

#include "gtest/gtest.h"

namespace shapeshift::testing {

inline constexpr const char* kRealExports[] = {
    "bert-base-torchscript",  "bert-base-dynamo",  "distilbert-torchscript", "distilbert-dynamo",
    "roberta-base-torchscript", "roberta-base-dynamo", "gpt2-torchscript",     "gpt2-dynamo",
    "gpt2-past-torchscript",  "gpt2-past-dynamo"};

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
