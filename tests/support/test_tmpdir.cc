// Every test binary's files go under the build tree, not /tmp: CMake passes
// SHAPESHIFT_TEST_TMPDIR (<build>/test-tmp, cmake/ShapeshiftLibrary.cmake),
// and ::testing::TempDir() reads TEST_TMPDIR, std::filesystem::
// temp_directory_path() and mkdtemp's callers TMPDIR; the CLI processes the
// tests start inherit both. Set by a static initializer, so before main and
// any test; a value already in the environment wins. (ctest's ENVIRONMENT
// property cannot carry it: gtest_discover_tests splits a list of
// variables into separate properties.)
#include <cstdlib>

namespace {

const bool kTestTmpdirSet = [] {
  setenv("TEST_TMPDIR", SHAPESHIFT_TEST_TMPDIR, /*overwrite=*/0);
  setenv("TMPDIR", SHAPESHIFT_TEST_TMPDIR, /*overwrite=*/0);
  return true;
}();

}  // namespace
