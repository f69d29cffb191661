# The CUDA switch: LINEA_CUDA = AUTO | ON | OFF. Sets LINEA_HAS_CUDA when the CUDA backend is built.
#
# The backend is header-only (include/linea/cuda.hpp, for nvcc translation units); what this file adds is the
# CUDA language for linea's own CUDA tests and benchmarks, and linea_cuda_target(<target>) for their flags:
# Hopper machine code (sm_90a) plus compute_80 PTX that any newer GPU can compile at load time.
set(LINEA_HAS_CUDA OFF)
if(NOT LINEA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(LINEA_HAS_CUDA ON)
  elseif(LINEA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LINEA_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "linea: CUDA backend ${LINEA_HAS_CUDA}")

if(LINEA_HAS_CUDA)
  enable_language(CUDA)
  # The kernels are not sm_90a-only (mma.sync, cp.async: sm_80; stmatrix behind __CUDA_ARCH__ >= 900), and sm_90a
  # code runs on Hopper alone: the compute_80 PTX is what A100s and GPUs newer than Hopper run. A build that only
  # checks that the CUDA code compiles (CI: no GPU) can take sm_90a alone, one device pass instead of two: .ci/run
  # sets LINEA_CUDA_GENCODE in the environment, which becomes this default.
  if(DEFINED ENV{LINEA_CUDA_GENCODE})
    set(_linea_gencode "$ENV{LINEA_CUDA_GENCODE}")
  else()
    set(_linea_gencode "-gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_80,code=compute_80")
  endif()
  set(LINEA_CUDA_GENCODE "${_linea_gencode}" CACHE STRING "nvcc code generation flags of linea's CUDA targets")
  # GPU tests join ctest only where a GPU answers at configure time (CI has nvcc but no GPU).
  if(NOT DEFINED LINEA_CUDA_TESTS)
    execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _linea_smi OUTPUT_QUIET ERROR_QUIET)
    if(_linea_smi EQUAL 0)
      set(LINEA_CUDA_TESTS ON)
    else()
      set(LINEA_CUDA_TESTS OFF)
    endif()
  endif()
  function(linea_cuda_flags target)
    # C++20 by flag: CMake before 3.26 knows no CUDA20 dialect for nvcc.
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF)
    # Eigen (pulled in by the CPU forms) needs relaxed constexpr under nvcc; its defaulted-function notes are noise.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:${LINEA_CUDA_GENCODE};-std=c++20;--expt-relaxed-constexpr;-diag-suppress=20012,20013,20015>)
  endfunction()
  # linea's own CUDA binaries (tests, benchmark, conformance runner) share one compilation of the CUDA forms of
  # linea's rules: a static library of explicit instantiations, one TU per rule (they build in parallel), which
  # the binaries declare extern (include/linea/backend/cuda/instances.hpp) instead of compiling every kernel again.
  if(LINEA_BUILD_TESTS OR LINEA_BUILD_BENCH OR LINEA_BUILD_TOOLS)
    file(GLOB _linea_cuda_instances CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/backend/cuda/instances/*.cu)
    add_library(linea_cuda_instances STATIC ${_linea_cuda_instances})
    target_link_libraries(linea_cuda_instances PUBLIC linea::linea)
    target_compile_definitions(linea_cuda_instances INTERFACE LINEA_CUDA_EXTERN_INSTANCES)
    # The backward's phase launchers (and so its kernels, which depend on the rule's shape, not the rule) are
    # compiled once, in instances/backward_phases*.cu, and declared extern in the rules' units and in every binary
    # that links the library (include/linea/backend/cuda/backward_phase_instances.hpp): before, each rule's unit
    # compiled the shared ones again (CI time, bench/README.md "CI build time"). Two units, so they build in parallel.
    target_compile_definitions(linea_cuda_instances PUBLIC LINEA_CUDA_EXTERN_BACKWARD_PHASES)
    # Position-independent: the Python extension (a shared module) links this same library (scripts/test_python.sh).
    set_target_properties(linea_cuda_instances PROPERTIES POSITION_INDEPENDENT_CODE ON)
    linea_cuda_flags(linea_cuda_instances)
  endif()
  function(linea_cuda_target target)
    linea_cuda_flags(${target})
    target_link_libraries(${target} PRIVATE linea_cuda_instances)
  endfunction()
endif()
