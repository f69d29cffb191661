// tests/backend/cuda/neg_inf_test.cu — gates of exactly 0 (log decay −inf) on the GPU: at the first token, mid-chunk,
// either side of a chunk boundary and at the last token, every CUDA form gives the float64 reference's result within
// SPEC §5 (issue #13; the chunk kernels clamp the log decays before their in-chunk sums, chunk_tiles.hpp); and a
// NaN or inf input poisons only what the recurrence poisons (below).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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

TEST_CASE("cuda: a log decay of -inf (simple_gla, gla, gated_delta, kda, gdn2) equals the reference") {
  check_rule<simple_gla>();
  check_rule<gla>();          // bf16: the per-key pipeline (perkey_delta_kernel.hpp)
  check_rule<gated_delta>();  // bf16: the delta pipeline
  check_rule<kda>();          // kda, gdn2: bf16 the per-key pipeline (pk18-next), float the general kernel
  check_rule<gdn2>();
}

// A NaN or inf input at token t (one channel of q, k or v, the gate g or one channel of gk, β) leaves every output
// before t as the float64 reference has it, and is non-finite exactly where the reference is (the CPU's test:
// tests/chunk/non_finite_test.cpp). t sits inside a 16-row diagonal block of the chunk, where a masked entry of
// P or T times the poisoned row would reach the earlier rows on tensor cores (causal_strip.hpp). Every chunk kernel:
// the 64-token scalar kernel (additive, simple_gla; bf16), the general kernel (float), the delta pipeline (delta,
// gated_delta; bf16: a chunk is flagged as its k, v, g, β land) and the per-key pipeline (gla, kda, gdn2; bf16:
// flagged as its v lands, and for kda / gdn2 as its k, gates and log decays do — pk18-next).
namespace {

enum class poison_site { q, k, v, g, beta };
const char* poison_site_name(poison_site p) {
  const char* names[] = {"q", "k", "v", "g", "beta"};
  return names[static_cast<int>(p)];
}

template <class X, class R>
bool same_finite_pattern(const tensor<X, 4>& x, const tensor<R, 4>& ref) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(double(x.data()[i])) != std::isfinite(double(ref.data()[i]))) return false;
  return true;
}

// Tokens [0, t) of every batch row and head, flattened.
template <class X>
std::vector<double> before(const tensor<X, 4>& o, index_t t) {
  std::vector<double> x;
  for (index_t b = 0; b < o.extent(0); ++b)
    for (index_t s = 0; s < t; ++s)
      for (index_t h = 0; h < o.extent(2); ++h)
        for (index_t j = 0; j < o.extent(3); ++j) x.push_back(double(o(b, s, h, j)));
  return x;
}

template <class Rule, class T>
void check_poison(index_t K, index_t V, poison_site p, index_t t, float value) {
  const case_shape shape{.B = 2, .T = 150, .H = 1, .HV = 2, .K = K, .V = V, .initial_state = true, .seed = 9};
  auto c = random_case<Rule, T>::make(shape);
  const T x = T(value);
  switch (p) {  // batch row 0, value head 1 (its key head 0): the other row and head stay finite
    case poison_site::q: c.q(0, t, 0, 5) = x; break;
    case poison_site::k: c.k(0, t, 0, 3) = x; break;
    case poison_site::v: c.v(0, t, 1, 7) = x; break;
    case poison_site::g:
      if constexpr (reads(Rule::inputs, input::g)) c.g(0, t, 1) = x;
      else c.gk(0, t, 1, 3) = x;
      break;
    case poison_site::beta: c.beta(0, t, 1) = x; break;
  }
  auto ref = c.template cast<double>();
  reference::recurrent<Rule, read::identity>(ref.args());

  device_case<Rule, T> d{c};
  chunkwise<Rule, read::identity, backend::cuda>(d.args(c.args()));
  d.back();

  INFO(rule_name<Rule>::value, sizeof(T) == 2 ? " bf16" : " float32", ": ", std::isnan(value) ? "NaN" : "inf", " in ",
       poison_site_name(p), " at token ", t);
  const std::vector<double> got = before(c.o, t), want = before(ref.o, t);
  CHECK(std::all_of(got.begin(), got.end(), [](double y) { return std::isfinite(y); }));
  CHECK(relative_error(got.data(), want.data(), got.size()) <= tolerance_for<T>(shape.T));
  CHECK(same_finite_pattern(c.o, ref.o));
  CHECK(same_finite_pattern(c.ht, ref.ht));
}

template <class Rule, class T>
void check_poisons(index_t K, index_t V) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // 89: row 9 of the block of rows 80..95 (64-token chunks: the chunk from 64; the general kernel's 32-token
  // chunks: the one from 64 as well); 100 and 141: other blocks, the last chunk partial.
  check_poison<Rule, T>(K, V, poison_site::v, 89, nan);
  check_poison<Rule, T>(K, V, poison_site::v, 141, inf);
  check_poison<Rule, T>(K, V, poison_site::k, 89, nan);
  check_poison<Rule, T>(K, V, poison_site::q, 100, nan);
  if constexpr (reads(Rule::inputs, input::g) || reads(Rule::inputs, input::gk))
    check_poison<Rule, T>(K, V, poison_site::g, 89, nan);
  if constexpr (reads(Rule::inputs, input::beta)) check_poison<Rule, T>(K, V, poison_site::beta, 89, nan);
}

}  // namespace

TEST_CASE("cuda: a NaN or inf input poisons only what the recurrence poisons (scalar and general chunk kernels)") {
  check_poisons<additive, bf16>(64, 64);  // the scalar 64-token kernel
  check_poisons<simple_gla, bf16>(64, 64);
  check_poisons<gated_delta, float>(32, 16);  // the general kernel
  check_poisons<simple_gla, float>(32, 16);
  check_poisons<kda, float>(32, 16);
  check_poisons<kda, bf16>(64, 64);  // kda and gdn2 in bf16: the per-key pipeline since pk18-next (launch.hpp)
  check_poisons<gdn2, bf16>(64, 64);
}

// The pipelined kernels flag a chunk whose inputs hold an inf or NaN and take the exact diagonal blocks there only.
TEST_CASE("cuda: a NaN or inf input poisons only what the recurrence poisons (delta and per-key pipelines)") {
  check_poisons<delta, bf16>(64, 64);  // the delta pipeline
  check_poisons<gated_delta, bf16>(64, 64);
  check_poisons<gated_delta, bf16>(128, 128);  // the library's shape: every column of the 128-wide tiles
  check_poisons<gla, bf16>(64, 64);  // the per-key pipeline
  check_poisons<gla, bf16>(128, 128);
  check_poisons<kda, bf16>(128, 128);  // the erasing mode (pk18-next)
  check_poisons<gdn2, bf16>(128, 128);
}
