# The ctest `package_reference`: <linea/reference.hpp> needs only the standard library. Compiles
# tests/package/reference_only.cpp with -I<linea>/include as its only include path (no Eigen, no xsimd, no
# -pthread) at -O0 (a second or two), then runs it.
# Run as: cmake -DLINEA_SOURCE_DIR=... -DWORK_DIR=... -DCXX=... -P reference_only.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var LINEA_SOURCE_DIR WORK_DIR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "reference_only.cmake needs -D${var}=...")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK_DIR})
set(exe ${WORK_DIR}/reference_only)
execute_process(COMMAND ${CXX} -std=c++20 -Wall -Wextra -I${LINEA_SOURCE_DIR}/include
                        ${CMAKE_CURRENT_LIST_DIR}/reference_only.cpp -o ${exe}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "package_reference: compiling with only -I${LINEA_SOURCE_DIR}/include failed:\n${out}")
endif()
execute_process(COMMAND ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "package_reference: the reference-only consumer failed (exit ${rc})")
endif()
