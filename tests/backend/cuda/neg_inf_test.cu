// tests/backend/cuda/neg_inf_test.cu — gates of exactly 0 (log decay −inf) on the GPU: at the first token, mid-chunk,
// either side of a chunk boundary and at the last token, every CUDA form gives the float64 reference's result within
// SPEC §5 (issue #13; the chunk kernels clamp the log decays before their in-chunk sums, chunk_tiles.hpp).
#include <doctest/doctest.h>

#include <limits>

#include "backend/cuda/device_case.hpp"
#include "support/compare.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// Log decay −inf at the tokens of both value heads of every batch row: g, or every channel of gk (channel 3 alone
// at the odd tokens, so that a per-key gate is also zero in one channel only).
template <class Rule, class T>
void zero_gates(random_case<Rule, T>& c, std::initializer_list<index_t> tokens) {
  const T neg_inf = T(-std::numeric_limits<float>::infinity());
  for (index_t b = 0; b < c.shape.B; ++b)
    for (index_t t : tokens)
      for (index_t hv = 0; hv < c.shape.HV; ++hv) {
        if constexpr (reads(Rule::inputs, input::g)) c.g(b, t, hv) = neg_inf;
        else
          for (index_t i = 0; i < c.shape.K; ++i)
            if (t % 2 == 0 || i == 3) c.gk(b, t, hv, i) = neg_inf;
      }
}

template <class Rule, class Read, class T, bool Chunkwise>
void check_neg_inf(index_t K, index_t V) {
  constexpr bool ccq = !Read::is_identity;
  const case_shape shape{.B = 2, .T = 130, .H = 1, .HV = 2, .K = K, .V = V, .initial_state = true, .seed = 3};
  auto c = random_case<Rule, T>::make(shape);
  zero_gates(c, {0, 37, 63, 64, 100, 129});
  ccq_tensors<T> s;
  if constexpr (ccq) s = ccq_tensors<T>::make(c.shape, c.N, {.initial_stats = true});
  auto ref = c.template cast<double>();
  auto sref = s.template cast<double>();
  auto ra = ref.args();
  if constexpr (ccq) sref.attach(ra);
  reference::recurrent<Rule, Read>(ra);
  REQUIRE(all_finite(ref.o));

  device_case<Rule, T> d{c, ccq ? &s : nullptr};
  auto ha = c.args();
  if constexpr (ccq) s.attach(ha);
  if constexpr (Chunkwise) chunkwise<Rule, Read, backend::cuda>(d.args(ha));
  else recurrent<Rule, Read, backend::cuda>(d.args(ha));
  d.back();

  const double tol = tolerance_for<T>(shape.T);
  INFO(rule_name<Rule>::value, Chunkwise ? " chunkwise" : " recurrent", ccq ? " ccq" : " identity",
       sizeof(T) == 2 ? " 16-bit" : " float32", " K=", K, " V=", V);
  CHECK(all_finite(c.o));
  CHECK(all_finite(c.ht));
  CHECK(relative_error(c.o, ref.o) <= tol);
  CHECK(relative_error(c.ht, ref.ht) <= tol);
  CHECK(relative_error(c.residual, ref.residual) <= tol);
  if constexpr (ccq) CHECK(relative_error(s.C, sref.C) <= tol);
}

// Both forms, float32 (the general chunk kernel) and bf16 at K = V = 64 (the 64-token kernels take it).
template <class Rule>
void check_rule() {
  check_neg_inf<Rule, read::identity, float, false>(32, 16);
  check_neg_inf<Rule, read::identity, float, true>(32, 16);
  check_neg_inf<Rule, read::identity, bf16, true>(64, 64);
  check_neg_inf<Rule, read::ccq<read::decayed>, float, true>(32, 16);
}

}  // namespace

TEST_CASE("cuda: a log decay of -inf (simple_gla, gla, gated_delta, kda) equals the reference") {
  check_rule<simple_gla>();
  check_rule<gla>();
  check_rule<gated_delta>();
  check_rule<kda>();
}
