# The package test (ctest `package`): builds two real consumer projects of linea and runs them.
#   1. configure linea alone (no tests, no tools) and `cmake --install` it into a scratch prefix;
#   2. tests/package/find_package: find_package(linea 0.1) from that prefix, build, run;
#   3. tests/package/add_subdirectory: add_subdirectory(<linea source>), build, run.
# Run as: cmake -DLINEA_SOURCE_DIR=... -DWORK_DIR=... [-DGENERATOR=...] [-DCXX=...] -P run.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var LINEA_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run.cmake needs -D${var}=...")
  endif()
endforeach()
set(here ${CMAKE_CURRENT_LIST_DIR})
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# No build type: the consumers only prove that linea compiles, links and runs; -O0 halves their compile time.
set(common -DCMAKE_BUILD_TYPE=)
if(GENERATOR)
  list(APPEND common -G ${GENERATOR})
endif()
if(CXX)
  list(APPEND common -DCMAKE_CXX_COMPILER=${CXX})
endif()

function(step what)
  message(STATUS "package test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: '${what}' failed (exit ${rc}):\n${out}")
  endif()
  string(STRIP "${out}" out)
  string(REGEX MATCH "[^\n]*$" last "${out}")
  message(STATUS "  ${last}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
step("configure linea for install" ${CMAKE_COMMAND} -S ${LINEA_SOURCE_DIR} -B ${WORK_DIR}/linea ${common}
     -DLINEA_BUILD_TESTS=OFF -DLINEA_BUILD_BENCH=OFF -DLINEA_BUILD_EXAMPLES=OFF -DLINEA_BUILD_TOOLS=OFF
     -DLINEA_CUDA=OFF -DCMAKE_INSTALL_PREFIX=${prefix})
step("install linea into ${prefix}" ${CMAKE_COMMAND} --install ${WORK_DIR}/linea)
if(NOT EXISTS ${prefix}/include/linea/linea.hpp)
  message(FATAL_ERROR "package test: the install did not place include/linea/linea.hpp under ${prefix}")
endif()

step("configure the find_package consumer" ${CMAKE_COMMAND} -S ${here}/find_package -B ${WORK_DIR}/find_package
     ${common} -DCMAKE_PREFIX_PATH=${prefix})
step("build the find_package consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/find_package)
step("run the find_package consumer" ${WORK_DIR}/find_package/consumer)

step("configure the add_subdirectory consumer" ${CMAKE_COMMAND} -S ${here}/add_subdirectory
     -B ${WORK_DIR}/add_subdirectory ${common} -DLINEA_SOURCE_DIR=${LINEA_SOURCE_DIR})
step("build the add_subdirectory consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/add_subdirectory)
step("run the add_subdirectory consumer" ${WORK_DIR}/add_subdirectory/consumer)
message(STATUS "package test: both consumers built and ran")
