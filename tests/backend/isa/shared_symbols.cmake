# Part of the ctest `isa_symbols`: the two object files of tests/backend/isa/forms.cpp (-mavx2 -mfma and
# -mno-avx) must not both define a linea symbol that holds arithmetic. The only linea symbols they may share
# are argument checking and error text (number_string among it; backend/isa.hpp says why those stay shared), with the argument plumbing
# they use: core/view.hpp's view builders (contiguous, strided: extents and strides copied into a view) and
# element_reach (a view's lowest and highest element offsets, for the checks), core/seqlens.hpp's cu_seqlens_span
# accessors, and core/empty_call.hpp's two predicates (is there anything to write).
# Run as: cmake -DNM=... -DWIDE=<object> -DBASE=<object> -P shared_symbols.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var NM WIDE BASE)
  if(NOT ${var})
    message(FATAL_ERROR "shared_symbols.cmake needs -D${var}=...")
  endif()
endforeach()
function(defined_symbols object out)
  execute_process(COMMAND ${NM} -C --defined-only ${object} RESULT_VARIABLE rc OUTPUT_VARIABLE text)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REPLACE ";" "," text "${text}")  # template argument lists hold no ';' but be safe
  string(REGEX REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>": the external definitions (T text, W/V weak, u unique, R/D/B data).
    if(line MATCHES "^[0-9a-f]+ [TWVuRDB] (.*linea::.*)$")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
defined_symbols(${WIDE} wide)
defined_symbols(${BASE} base)
set(allowed "linea::error|linea::contiguous<|linea::strided<|linea::cu_seqlens_span::|shape_string<|extents_string<|linea::detail::expect_|linea::detail::dims|validate|sequence_of<|check_recurrent_only|linea::detail::byte_range|linea::detail::bytes_of|linea::detail::describe_memory|linea::detail::shared_element_axis<|linea::detail::forward_writes_nothing<|linea::detail::backward_writes_no_state_gradient<|linea::element_reach<|linea::detail::number_string")
set(shared 0)
set(bad "")
foreach(name IN LISTS wide)
  if(name IN_LIST base)
    math(EXPR shared "${shared} + 1")
    if(NOT name MATCHES "${allowed}")
      string(APPEND bad "\n  ${name}")
    endif()
  endif()
endforeach()
list(LENGTH wide n_wide)
message(STATUS "isa_symbols: ${n_wide} linea symbols in the -mavx2 -mfma unit, ${shared} shared with the -mno-avx unit (argument checks)")
if(bad)
  message(FATAL_ERROR "isa_symbols: both units define these linea symbols, so one unit runs the other's code:${bad}")
endif()
