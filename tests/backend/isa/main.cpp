// The two-instruction-set test (ctest `isa_symbols`): forms.cpp compiled with -mavx2 -mfma and with -mno-avx
// in one executable. Before the instruction set was part of the symbols (backend/isa.hpp), both units called
// one copy of each form, whichever the linker kept (SIGILL on a CPU without AVX2, or lane counts that disagree
// with the caller). Checks: the units report different instruction sets, their form instantiations are
// different functions, and each unit's results match the float64 reference within SPEC §5.
// tests/backend/isa/shared_symbols.cmake checks the object files for any shared SIMD symbol.
#include <cstdio>
#include <cstring>

#include "forms.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace t = linea::testing;

int main() {
  using rule = linea::gated_delta;
  auto c = t::random_case<rule, float>::make({.B = 2, .T = 100, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true});
  auto ref = c.cast<double>();
  linea::reference::recurrent<rule>(ref.args());

  int failures = 0;
  const auto check = [&](const char* what, bool ok) {
    std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    failures += ok ? 0 : 1;
  };
  const auto run = [&](const char* name, auto entry) {
    auto chunk = c, rec = c;  // separate outputs per form
    const isa_unit u = entry(chunk.args(), rec.args());
    const double ec = t::relative_error(chunk.o, ref.o), er = t::relative_error(rec.o, ref.o);
    const double sc = t::relative_error(chunk.ht, ref.ht), sr = t::relative_error(rec.ht, ref.ht);
    std::printf("%s unit (%s): chunkwise o %.1e S %.1e, recurrent o %.1e S %.1e\n", name, u.isa, ec, sc, er, sr);
    const double tol = t::tolerance_for<float>(100);
    check(name, ec <= tol && sc <= tol && er <= tol && sr <= tol);
    return u;
  };
  const isa_unit wide = run("-mavx2 -mfma", run_wide);
  const isa_unit base = run("-mno-avx", run_baseline);
  check("the two units were compiled for different instruction sets", std::strcmp(wide.isa, base.isa) != 0);
  check("linea::chunkwise is a different function in each unit", wide.chunkwise_symbol != base.chunkwise_symbol);
  check("linea::recurrent is a different function in each unit", wide.recurrent_symbol != base.recurrent_symbol);
  return failures == 0 ? 0 : 1;
}
