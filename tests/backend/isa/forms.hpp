// tests/backend/isa/forms.hpp — what each unit of the two-instruction-set test (ctest `isa_symbols`) offers.
//
// forms.cpp is compiled twice into one executable, once with -mavx2 -mfma and once with -mno-avx, and each copy
// defines its entry point under its own name (LINEA_TEST_ENTRY). main.cpp calls both on the same inputs.
#pragma once
#include <linea/core/arguments.hpp>
#include <linea/core/gradients.hpp>

using isa_backward = void (*)(const linea::arguments<float>&, const linea::gradients<float>&);

struct isa_unit {
  const char* isa;                // LINEA_ISA_NAME as that unit saw it
  const void* chunkwise_symbol;   // &linea::chunkwise<gated_delta, identity, cpu, float, float> in that unit
  const void* recurrent_symbol;   // &linea::recurrent<...> likewise
  // The CCQ backward (backend/cpu/ccq_tape.hpp and the per-token sums) in that unit, for main.cpp to call:
  isa_backward gated_delta_ccq;   // &linea::backward<gated_delta, ccq<uniform>, cpu, float, float>
  isa_backward kda_ccq;           // &linea::backward<kda, ccq<decayed>, cpu, float, float> (per-key decay)
};

// Runs chunkwise (into chunk.o) and recurrent (into rec.o) with the unit's own instruction set.
isa_unit run_wide(const linea::arguments<float>& chunk, const linea::arguments<float>& rec);
isa_unit run_baseline(const linea::arguments<float>& chunk, const linea::arguments<float>& rec);
