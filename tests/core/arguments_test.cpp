// Every field of linea::arguments, its nested structs and linea::gradients has a default member initialiser, so
// a user's designated initialisers that leave fields out compile without -Wmissing-field-initializers (part of
// -Wextra). This file turns that warning into an error: it fails to compile if a field loses its default.
#pragma GCC diagnostic error "-Wmissing-field-initializers"

#include <doctest/doctest.h>

#include <linea/linea.hpp>

using namespace linea;

TEST_CASE("arguments: designated initialisers may leave any field out") {
  std::vector<float> buf(2 * 3 * 1 * 4);
  const auto x = contiguous<4>(std::as_const(buf), {2, 3, 1, 4});
  const arguments<float> a{.q = x, .k = x, .v = x, .o = contiguous<4>(buf, {2, 3, 1, 4})};
  const arguments<float> b{.chunk_size = 32};
  const ccq_arguments<float, float> c{.lambda = {}};
  const gate_activation gate{.lower_bound = -5.f};
  const gradients<float> g{.dq = contiguous<4>(buf, {2, 3, 1, 4})};
  const problem p{.B = 2};
  const sequence s{.t_end = 3};
  CHECK(a.gk.empty());
  CHECK(a.cu_seqlens.empty());
  CHECK(a.state_indices.empty());
  CHECK(!a.scale);
  CHECK(b.q.empty());
  CHECK(c.C.empty());
  CHECK(!gate.active());
  CHECK(g.d_o.empty());
  CHECK(p.N == 0);
  CHECK(s.batch == 0);
}
