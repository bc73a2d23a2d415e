# Third-party dependencies, all from Debian packages (scripts/setup-deps.sh).
find_package(absl REQUIRED CONFIG)
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)
find_package(nlohmann_json REQUIRED CONFIG)
find_package(OpenMP REQUIRED)
find_package(dnnl REQUIRED CONFIG)
# OpenSSL's libcrypto: SHA-256 and HMAC-SHA-256 (runtime/persist/signing.h).
find_package(OpenSSL REQUIRED)
# hiredis ships no usable CMake target on Debian 12; pkg-config has it.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
find_package(LLVM 14 REQUIRED CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)

# Z3 ships no CMake config on Debian: locate header and library directly.
find_path(Z3_INCLUDE_DIR z3++.h REQUIRED)
find_library(Z3_LIBRARY z3 REQUIRED)
add_library(shapeshift_z3 INTERFACE)
target_include_directories(shapeshift_z3 SYSTEM INTERFACE ${Z3_INCLUDE_DIR})
target_link_libraries(shapeshift_z3 INTERFACE ${Z3_LIBRARY})

# LLVM as one interface target; components chosen for ORC JIT on the host.
llvm_map_components_to_libnames(SHAPESHIFT_LLVM_LIBS core orcjit native passes ipo vectorize)
add_library(shapeshift_llvm INTERFACE)
target_include_directories(shapeshift_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(shapeshift_llvm INTERFACE ${LLVM_DEFINITIONS})
if(TARGET LLVM)
  # Link the single shared libLLVM: much faster to link than the static components.
  target_link_libraries(shapeshift_llvm INTERFACE LLVM)
else()
  target_link_libraries(shapeshift_llvm INTERFACE ${SHAPESHIFT_LLVM_LIBS})
endif()

# CUDA toolkit (optional): the CUDA backend builds only when NVRTC is present.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc)
  set(SHAPESHIFT_HAVE_CUDA ON)
  message(STATUS "shapeshift: CUDA toolkit ${CUDAToolkit_VERSION} found; CUDA backend enabled")
else()
  set(SHAPESHIFT_HAVE_CUDA OFF)
  message(STATUS "shapeshift: CUDA toolkit not found; CUDA backend skipped")
endif()

if(SHAPESHIFT_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SHAPESHIFT_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
