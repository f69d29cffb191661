// A user who wants only the float64 oracle: <linea/reference.hpp> with nothing but the standard library.
// The ctest `package_reference` compiles this file with -I<linea>/include and no other include path (no Eigen,
// no xsimd, no -pthread), then runs it. It checks the reference recurrence against the additive rule written
// out by hand, o_t = s Σ_{j≤t} (q_t·k_j) v_j, and the reference backward's dL/dv against that formula's
// derivative dL/dv_j = s Σ_{t≥j} (q_t·k_j) d_o_t.
#include <cmath>
#include <cstdio>

#include <linea/reference.hpp>

// xsimd lives in a default include directory on many systems, so "it compiled" alone would not show that
// the header stayed off it; its version macro would.
#if defined(XSIMD_VERSION_MAJOR) || defined(EIGEN_WORLD_VERSION) || defined(_GLIBCXX_THREAD)
#error "<linea/reference.hpp> pulled in xsimd, Eigen or <thread>"
#endif

int main() {
  constexpr linea::index_t B = 1, T = 4, H = 1, K = 3, V = 2;
  double q[T * K], k[T * K], v[T * V], o[T * V] = {}, d_o[T * V], dv[T * V] = {};
  for (int i = 0; i < T * K; ++i) q[i] = std::sin(0.7 * i), k[i] = 0.5 * std::cos(1.3 * i);
  for (int i = 0; i < T * V; ++i) v[i] = std::sin(0.3 * i + 1), d_o[i] = std::cos(0.9 * i);
  const auto in4 = [](const double* p, linea::index_t d) { return linea::contiguous<4>(p, {B, T, H, d}); };
  const auto out4 = [](double* p, linea::index_t d) { return linea::contiguous<4>(p, {B, T, H, d}); };
  const double s = 0.5;

  const linea::arguments<double> a{.q = in4(q, K), .k = in4(k, K), .v = in4(v, V), .o = out4(o, V), .scale = s};
  linea::reference::recurrent<linea::additive>(a);
  linea::reference::backward<linea::additive>(a, linea::gradients<double>{.d_o = in4(d_o, V), .dv = out4(dv, V)});

  double worst = 0;
  const auto qk = [&](int t, int j) {
    double d = 0;
    for (int i = 0; i < K; ++i) d += q[t * K + i] * k[j * K + i];
    return d;
  };
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < V; ++c) {
      double want_o = 0, want_dv = 0;
      for (int j = 0; j <= t; ++j) want_o += s * qk(t, j) * v[j * V + c];
      for (int u = t; u < T; ++u) want_dv += s * qk(u, t) * d_o[u * V + c];
      worst = std::fmax(worst, std::fmax(std::fabs(o[t * V + c] - want_o), std::fabs(dv[t * V + c] - want_dv)));
    }
  std::printf("linea reference-only consumer: additive o and dv vs the formula, max abs error %.1e\n", worst);
  return worst <= 1e-12 ? 0 : 1;  // float64 on O(1) values: a few ulps
}
