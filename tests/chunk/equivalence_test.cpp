// Chunkwise ≡ recurrent ≡ float64 reference (SPEC §5) for every rule and chunk size, over sequence lengths around
// the chunk sizes, packed sequences (cu_seqlens), grouped value heads and initial states.
// The default run uses small K, V and a reduced cross product; TEST_SUITE("slow") runs the full one.
#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "chunk/compare_forms.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

constexpr index_t chunk_sizes[] = {16, 32, 64, 128};

// Checks one case in float32 (both forms) and float64 (chunkwise): every output within SPEC §5 of the reference.
template <class Rule>
void check_case(const case_shape& shape, index_t C) {
  INFO(std::string(rule_name<Rule>::value), " chunk_size=", C, " ", describe_shape(shape));
  const auto f = compare_forms<Rule, float>(shape, C);
  const double tol = tolerance_for<float>(shape.T);
  CHECK(f.chunkwise.finite);
  CHECK(f.chunkwise.o <= tol);
  CHECK(f.chunkwise.state <= tol);
  CHECK(f.chunkwise.residual <= tol);
  CHECK(f.recurrent.worst() <= tol);
  const auto d = compare_forms<Rule, double>(shape, C, /*run_recurrent=*/false);
  CHECK(d.chunkwise.o <= tolerance_for<double>());
  CHECK(d.chunkwise.state <= tolerance_for<double>());
  CHECK(d.chunkwise.residual <= tolerance_for<double>());
}

}  // namespace

TEST_CASE_TEMPLATE("chunkwise matches recurrent and the float64 reference (reduced grid)", Rule, LINEA_ALL_RULES) {
  std::uint32_t seed = 1;
  for (index_t C : chunk_sizes) {
    // Lengths around one chunk of 16 and 64 (partial, exact, one over), two batch rows, GVA (HV = 2H).
    for (index_t T : {1, 15, 16, 17, 63, 64, 65})
      check_case<Rule>({.B = 2, .T = T, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = T % 2 == 1,
                        .head_first = T == 16, .seed = seed++},
                       C);
    // Packed sequences ending inside, at and just after a chunk; one of a single token.
    check_case<Rule>({.H = 2, .HV = 4, .K = 16, .V = 8, .seqlens = packed_lengths(17, C), .initial_state = true,
                      .seed = seed++},
                     C);
  }
  // A longer sequence, K ≠ V, three value heads per key head.
  check_case<Rule>({.B = 1, .T = 1000, .H = 1, .HV = 3, .K = 16, .V = 24, .initial_state = true, .seed = seed++}, 64);
}

TEST_SUITE("slow") {
  TEST_CASE_TEMPLATE("chunkwise matches recurrent and the float64 reference (full grid)", Rule, LINEA_ALL_RULES) {
    std::uint32_t seed = 1000;
    for (index_t C : chunk_sizes)
      for (index_t T : {1, 15, 16, 17, 63, 64, 65, 1000, 4096})
        for (bool packed : {false, true})
          for (index_t G : {1, 2})
            for (bool h0 : {false, true}) {
              case_shape s{.B = 2, .T = T, .H = 2, .HV = 2 * G, .K = 32, .V = 32, .initial_state = h0,
                           .head_first = (T + G) % 2 == 0, .seed = seed++};
              if (packed) s.seqlens = packed_lengths(T, C);
              check_case<Rule>(s, C);
            }
  }
}

TEST_CASE_TEMPLATE("chunkwise gives the same bits on any thread count and on the generic backend", Rule, simple_gla,
                   kda, gdn2) {
  auto one = random_case<Rule, float>::make(
      {.H = 2, .HV = 4, .K = 16, .V = 8, .seqlens = {70, 1, 33}, .initial_state = true, .seed = 9});
  auto many = one, generic = one;
  auto a1 = one.args(), a3 = many.args(), ag = generic.args();
  a1.chunk_size = a3.chunk_size = ag.chunk_size = 32;
  a3.threads = 3;
  chunkwise<Rule>(a1);
  chunkwise<Rule>(a3);
  chunkwise<Rule, read::identity, backend::generic>(ag);
  CHECK(one.o.values() == many.o.values());
  CHECK(one.ht.values() == many.ht.values());
  CHECK(one.residual.values() == many.residual.values());
  CHECK(one.o.values() == generic.o.values());
  CHECK(one.ht.values() == generic.ht.values());
}
