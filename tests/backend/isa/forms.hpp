// tests/backend/isa/forms.hpp — what each unit of the two-instruction-set test (ctest `isa_symbols`) offers.
//
// forms.cpp is compiled twice into one executable, once with -mavx2 -mfma and once with -mno-avx, and each copy
// defines its entry point under its own name (LINEA_TEST_ENTRY). main.cpp calls both on the same inputs.
#pragma once
#include <linea/core/arguments.hpp>

struct isa_unit {
  const char* isa;                // LINEA_ISA_NAME as that unit saw it
  const void* chunkwise_symbol;   // &linea::chunkwise<gated_delta, identity, cpu, float, float> in that unit
  const void* recurrent_symbol;   // &linea::recurrent<...> likewise
};

// Runs chunkwise (into chunk.o) and recurrent (into rec.o) with the unit's own instruction set.
isa_unit run_wide(const linea::arguments<float>& chunk, const linea::arguments<float>& rec);
isa_unit run_baseline(const linea::arguments<float>& chunk, const linea::arguments<float>& rec);
