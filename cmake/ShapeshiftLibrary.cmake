# shapeshift_library(NAME [FLAT] [DIR SUBDIR] DEPS ...): one library per folder,
# sources globbed from the folder (recursively; FLAT: its own files only, for
# a folder whose subfolders are libraries of their own; DIR: a subfolder of
# the current one), public headers addressed from the repo root. A folder
# without sources yet is an INTERFACE library, so later folders exist as
# targets before their issue lands.
function(shapeshift_library name)
  cmake_parse_arguments(ARG "FLAT" "DIR" "DEPS;PRIVATE_DEPS" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  if(ARG_DIR)
    set(dir ${dir}/${ARG_DIR})
  endif()
  if(ARG_FLAT)
    file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  else()
    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  endif()
  list(FILTER srcs EXCLUDE REGEX "_test\\.cc$")
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${SHAPESHIFT_ROOT} ${CMAKE_BINARY_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${SHAPESHIFT_ROOT} ${CMAKE_BINARY_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS} ${ARG_PRIVATE_DEPS})
  endif()
endfunction()

# shapeshift_test(NAME DEPS ...): one GoogleTest binary per test folder; every
# *_test.cc in the folder is part of it; each TEST is its own ctest entry.
function(shapeshift_test name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(SHAPESHIFT_SANITIZE MATCHES "thread")
    # Debian's abseil is uninstrumented: tell TSan what its locks mean.
    target_sources(${name} PRIVATE ${SHAPESHIFT_ROOT}/tests/support/tsan_absl_sync.cc)
    target_link_libraries(${name} PRIVATE ${CMAKE_DL_LIBS})
  endif()
  # What a test writes (bundles, traces, stderr captures, caches) goes under
  # the build tree, not /tmp (tests/support/test_tmpdir.cc): a full run left
  # ~100 MB there before, now it goes away with the build.
  set(test_tmp ${CMAKE_BINARY_DIR}/test-tmp)
  file(MAKE_DIRECTORY ${test_tmp})
  target_sources(${name} PRIVATE ${SHAPESHIFT_ROOT}/tests/support/test_tmpdir.cc)
  target_compile_definitions(${name} PRIVATE
    SHAPESHIFT_SOURCE_DIR="${SHAPESHIFT_ROOT}"
    SHAPESHIFT_BINARY_DIR="${CMAKE_BINARY_DIR}"
    SHAPESHIFT_TEST_TMPDIR="${test_tmp}")
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120
    PROPERTIES ENVIRONMENT "SHAPESHIFT_SOURCE_DIR=${SHAPESHIFT_ROOT}")
endfunction()
