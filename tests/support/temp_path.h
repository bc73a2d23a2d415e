// A per-process path in the test temp dir, for every test that writes files.
#ifndef SHAPESHIFT_TESTS_SUPPORT_TEMP_PATH_H_
#define SHAPESHIFT_TESTS_SUPPORT_TEMP_PATH_H_

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace shapeshift::testing {

// `name` in the test temp dir, prefixed with this process's id: ctest runs
// tests as parallel processes, and two of them writing one fixed path (a
// shared stderr capture, a log, a bundle) read each other's output.
inline std::string ProcessTempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (std::to_string(getpid()) + "_" + name)).string();
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_SUPPORT_TEMP_PATH_H_
