// A program a linea user would write: include the library, run one rule, check it against the float64
// reference. Both consumer projects (find_package, add_subdirectory) build this file with -Wall -Wextra -Werror
// (GCC, Clang): designated initialisers that leave fields out must not warn. It exits non-zero when the two
// disagree beyond SPEC §5's float32 bound, so the package test checks compiling, linking and running. It follows
// the README's snippet: views over std::vector (size-checked), arguments<double> for float64 reference outputs,
// linea::relative_error, and packed sequences with int32 cu_seqlens as PyTorch may give them.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <utility>
#include <vector>

#include <linea/linea.hpp>

namespace {

constexpr linea::index_t B = 1, T = 7, H = 1, K = 4, V = 3;

// The same deterministic values in float32 and float64: small smooth values, decays in (−1, 0), beta in (0, 1).
template <class F>
struct buffers {
  std::vector<F> q = std::vector<F>(T * H * K), k = q, v = std::vector<F>(T * H * V), o = v;
  std::vector<F> g = std::vector<F>(T * H), beta = g;
  buffers() {
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = F(float(std::sin(0.7 * double(i))));
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = F(float(0.5 * std::cos(1.3 * double(i))));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = F(float(std::sin(0.3 * double(i) + 1)));
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = F(float(-0.1 * double(i + 1) / T));
    for (std::size_t i = 0; i < beta.size(); ++i) beta[i] = F(float(0.5 + 0.05 * double(i)));
  }
  // Two packed sequences (3 and 4 tokens) with an initial state of zero: no field beyond these is named.
  linea::arguments<F> args(const std::vector<std::int32_t>& cu) {
    return linea::arguments<F>{.q = linea::contiguous<4>(std::as_const(q), {B, T, H, K}, "q"),
                               .k = linea::contiguous<4>(std::as_const(k), {B, T, H, K}, "k"),
                               .v = linea::contiguous<4>(std::as_const(v), {B, T, H, V}, "v"),
                               .g = linea::contiguous<3>(std::as_const(g), {B, T, H}, "g"),
                               .beta = linea::contiguous<3>(std::as_const(beta), {B, T, H}, "beta"),
                               .cu_seqlens = cu,
                               .o = linea::contiguous<4>(o, {B, T, H, V}, "o")};
  }
};

}  // namespace

int main() {
  const std::vector<std::int32_t> cu{0, 3, T};
  buffers<float> x32;
  buffers<double> x64;
  linea::recurrent<linea::gated_delta>(x32.args(cu));
  linea::chunkwise<linea::gated_delta>(x32.args(cu));
  linea::reference::recurrent<linea::gated_delta>(x64.args(cu));

  const double rel = linea::relative_error(linea::contiguous<4>(std::as_const(x32.o), {B, T, H, V}),
                                           linea::contiguous<4>(std::as_const(x64.o), {B, T, H, V}));
  std::printf("linea %d.%d.%d consumer: gated_delta recurrent and chunkwise vs reference, relative error %.2e\n",
              LINEA_VERSION_MAJOR, LINEA_VERSION_MINOR, LINEA_VERSION_PATCH, rel);
  return rel <= 1e-5 ? 0 : 1;  // SPEC §5, float32
}
