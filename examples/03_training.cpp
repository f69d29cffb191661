// examples/03_training.cpp — training a one-layer Gated DeltaNet with linea's forward and backward.
//
// The model: from inputs x_t (d channels), q_t = W_q x_t, k_t = W_k x_t, v_t = W_v x_t; then Gated DeltaNet with
// the in-kernel L2 norm of q and k (fla's use_qk_l2norm_in_kernel), a fixed decay g = log 0.95 and β = 0.5:
//     S_t = S' + k̂_t β (v_t − S'ᵀ k̂_t)ᵀ,   S' = 0.95 S_{t−1},   o_t = S_tᵀ (s q̂_t)
// The toy task: reproduce a teacher of the same shape (random W*), so the loss can go to zero:
//     L = 1/(2 B T V) Σ_{b,t,j} (o_btj − y_btj)²,   y = teacher(x)
// Each step: forward (linea::recurrent), dL/do, backward (linea::backward on the CPU: dL/dq, dL/dk, dL/dv of the
// raw q, k, before the L2 norm), then dL/dW = Σ_{b,t} dL/d(row)_bt x_btᵀ, and a step of gradient descent.
// It prints the loss as it falls, and first checks one gradient against central finite differences.
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include <linea/linea.hpp>

namespace {

constexpr linea::index_t B = 4, T = 32, d = 8, K = 8, V = 4;  // batch, tokens, input channels, key / value width

using matrix = std::vector<double>;  // row-major rows × d

struct weights {
  matrix q, k, v;  // K×d, K×d, V×d
};

// rows_out[b, t, :] = W x[b, t, :]
matrix project(const matrix& W, linea::index_t rows, const matrix& x) {
  matrix out(static_cast<std::size_t>(B * T * rows));
  for (linea::index_t bt = 0; bt < B * T; ++bt)
    for (linea::index_t r = 0; r < rows; ++r) {
      double s = 0;
      for (linea::index_t c = 0; c < d; ++c) s += W[r * d + c] * x[bt * d + c];
      out[bt * rows + r] = s;
    }
  return out;
}

// dW = Σ_{b,t} drow_bt x_btᵀ
matrix weight_gradient(const matrix& drow, linea::index_t rows, const matrix& x) {
  matrix dW(static_cast<std::size_t>(rows * d), 0.0);
  for (linea::index_t bt = 0; bt < B * T; ++bt)
    for (linea::index_t r = 0; r < rows; ++r)
      for (linea::index_t c = 0; c < d; ++c) dW[r * d + c] += drow[bt * rows + r] * x[bt * d + c];
  return dW;
}

// The layer: o = GatedDeltaNet(W_q x, W_k x, W_v x) with fixed gates (g and β are inputs of every token).
struct layer {
  matrix g = matrix(B * T, std::log(0.95)), beta = matrix(B * T, 0.5);
  matrix q, k, v, o = matrix(B * T * V);

  // Views over the std::vectors, size-checked: a buffer shorter than its extents is a linea::error naming it.
  linea::arguments<double> args() {
    using linea::contiguous;
    return {.q = contiguous<4>(std::as_const(q), {B, T, 1, K}, "q"),
            .k = contiguous<4>(std::as_const(k), {B, T, 1, K}, "k"),
            .v = contiguous<4>(std::as_const(v), {B, T, 1, V}, "v"),
            .g = contiguous<3>(std::as_const(g), {B, T, 1}, "g"),
            .beta = contiguous<3>(std::as_const(beta), {B, T, 1}, "beta"),
            .o = contiguous<4>(o, {B, T, 1, V}, "o"),
            .qk_l2norm = true};
  }
  const matrix& forward(const weights& w, const matrix& x) {
    q = project(w.q, K, x), k = project(w.k, K, x), v = project(w.v, V, x);
    linea::recurrent<linea::gated_delta>(args());
    return o;
  }
};

double loss(const matrix& o, const matrix& y) {
  double s = 0;
  for (std::size_t i = 0; i < o.size(); ++i) s += (o[i] - y[i]) * (o[i] - y[i]);
  return s / (2.0 * double(o.size()));
}

// L and dL/dW for the student at w (the forward must have run: m holds q, k, v, o).
weights gradient(layer& m, const matrix& x, const matrix& y) {
  matrix d_o(m.o.size()), dq(m.q.size()), dk(m.k.size()), dv(m.v.size());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o[i] = (m.o[i] - y[i]) / double(d_o.size());
  using linea::contiguous;
  const linea::gradients<double> g{.d_o = contiguous<4>(std::as_const(d_o), {B, T, 1, V}, "d_o"),
                                   .dq = contiguous<4>(dq, {B, T, 1, K}, "dq"),
                                   .dk = contiguous<4>(dk, {B, T, 1, K}, "dk"),
                                   .dv = contiguous<4>(dv, {B, T, 1, V}, "dv")};
  // The CPU backward (chunk-boundary states, recomputed per chunk); linea::reference::backward is its float64 oracle.
  linea::backward<linea::gated_delta>(m.args(), g);
  return {weight_gradient(dq, K, x), weight_gradient(dk, K, x), weight_gradient(dv, V, x)};
}

matrix random_matrix(std::mt19937& rng, std::size_t n, double sd) {
  std::normal_distribution<double> normal(0.0, sd);
  matrix m(n);
  for (double& e : m) e = normal(rng);
  return m;
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  const matrix x = random_matrix(rng, B * T * d, 1.0);
  const weights teacher{random_matrix(rng, K * d, 1.0), random_matrix(rng, K * d, 1.0), random_matrix(rng, V * d, 1.0)};
  weights w{random_matrix(rng, K * d, 0.5), random_matrix(rng, K * d, 0.5), random_matrix(rng, V * d, 0.5)};
  layer m;
  const matrix y = layer{}.forward(teacher, x);

  // 1. The backward against central finite differences of the forward, on three entries of W_k.
  m.forward(w, x);
  const weights dw = gradient(m, x, y);
  std::printf("gradient check (dL/dW_k, analytic vs central differences, h = 1e-6):\n");
  double worst = 0;
  for (const int e : {0, 13, 42}) {
    const double h = 1e-6, keep = w.k[e];
    w.k[e] = keep + h;
    const double up = loss(m.forward(w, x), y);
    w.k[e] = keep - h;
    const double down = loss(m.forward(w, x), y);
    w.k[e] = keep;
    const double fd = (up - down) / (2 * h), rel = std::abs(fd - dw.k[e]) / std::max(std::abs(fd), 1e-12);
    worst = std::max(worst, rel);
    std::printf("  W_k[%2d]  backward %+.10e   finite differences %+.10e   relative difference %.1e\n", e, dw.k[e], fd,
                rel);
  }

  // 2. Gradient descent on W_q, W_k, W_v.
  const double lr = 2.0;
  const double first = loss(m.forward(w, x), y);
  double last = first;
  std::printf("training (gradient descent, learning rate %.1f):\n", lr);
  for (int step = 0; step <= 300; ++step) {
    last = loss(m.forward(w, x), y);
    if (step % 50 == 0) std::printf("  step %3d  loss %.6f\n", step, last);
    const weights gw = gradient(m, x, y);
    for (std::size_t i = 0; i < w.q.size(); ++i) w.q[i] -= lr * gw.q[i];
    for (std::size_t i = 0; i < w.k.size(); ++i) w.k[i] -= lr * gw.k[i];
    for (std::size_t i = 0; i < w.v.size(); ++i) w.v[i] -= lr * gw.v[i];
  }
  const bool ok = worst < 1e-5 && last < 0.5 * first;
  std::printf("%s: gradient check worst relative difference %.1e (bound 1e-5), loss %.6f -> %.6f\n",
              ok ? "PASS" : "FAIL", worst, first, last);
  return ok ? 0 : 1;
}
