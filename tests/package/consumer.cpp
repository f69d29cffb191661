// A program a linea user would write: include the library, run one rule, check it against the float64
// reference. Both consumer projects (find_package, add_subdirectory) build this file; it exits non-zero
// when the two disagree beyond SPEC §5's float32 bound, so the package test checks linking and running.
#include <cmath>
#include <cstdio>

#include <linea/linea.hpp>
#include <linea/tensor.hpp>

int main() {
  constexpr linea::index_t B = 1, T = 5, H = 1, K = 4, V = 3;
  linea::tensor<float, 4> q({B, T, H, K}), k({B, T, H, K}), v({B, T, H, V}), o({B, T, H, V});
  linea::tensor<float, 3> g({B, T, H}), beta({B, T, H});
  linea::tensor<double, 4> q64({B, T, H, K}), k64({B, T, H, K}), v64({B, T, H, V}), o64({B, T, H, V});
  linea::tensor<double, 3> g64({B, T, H}), beta64({B, T, H});
  // Deterministic inputs: small smooth values, decays in (−1, 0), beta in (0, 1).
  for (std::size_t i = 0; i < q.size(); ++i) q64.data()[i] = q.data()[i] = float(std::sin(0.7 * double(i)));
  for (std::size_t i = 0; i < k.size(); ++i) k64.data()[i] = k.data()[i] = float(0.5 * std::cos(1.3 * double(i)));
  for (std::size_t i = 0; i < v.size(); ++i) v64.data()[i] = v.data()[i] = float(std::sin(0.3 * double(i) + 1));
  for (std::size_t i = 0; i < g.size(); ++i) g64.data()[i] = g.data()[i] = float(-0.1 * double(i + 1) / T);
  for (std::size_t i = 0; i < beta.size(); ++i) beta64.data()[i] = beta.data()[i] = float(0.5 + 0.05 * double(i));

  linea::recurrent<linea::gated_delta>(linea::arguments<float>{.q = q, .k = k, .v = v, .g = g, .beta = beta, .o = o});
  linea::reference::recurrent<linea::gated_delta>(
      linea::arguments<double>{.q = q64, .k = k64, .v = v64, .g = g64, .beta = beta64, .o = o64});

  double num = 0, den = 0;
  for (std::size_t i = 0; i < o.size(); ++i) {
    num += (o.data()[i] - o64.data()[i]) * (o.data()[i] - o64.data()[i]);
    den += o64.data()[i] * o64.data()[i];
  }
  const double rel = std::sqrt(num / den);
  std::printf("linea %d.%d.%d consumer: gated_delta recurrent vs reference, relative error %.2e\n",
              LINEA_VERSION_MAJOR, LINEA_VERSION_MINOR, LINEA_VERSION_PATCH, rel);
  return (den > 0 && rel <= 1e-5) ? 0 : 1;  // SPEC §5, float32
}
