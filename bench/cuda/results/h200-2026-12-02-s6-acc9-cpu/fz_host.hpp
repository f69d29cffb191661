#pragma once
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>
#include <array>
#include <cstdio>
#include <algorithm>
#include <linea/linea.hpp>
#include "backend/cuda/fuzz/cuda_fuzz_plan.hpp"
#include "support/gradient_buffers.hpp"
#include "support/tolerance.hpp"
namespace linea::cuda_fuzz {
using testing::ccq_tensors;
using testing::random_case;
struct verdict {
  std::string failure;    // "" when the case holds the contract
  std::string rejection;  // the linea::error's message, when the call threw one
  double worst = 0;       // the largest error / tolerance among the compared tensors
  bool sticky = false;    // a CUDA error that poisons the context: the driver restarts the process
};

// Fills a host tensor's bytes with 0xFF (NaN in float32, bf16 and fp16).
template <class X, int R>
void poison(tensor<X, R>& t) {
  if (t.size()) std::memset(static_cast<void*>(t.data()), 0xFF, t.size() * sizeof(X));
}
template <class X, int R>
std::vector<unsigned char> bytes_of(const tensor<X, R>& t) {
  std::vector<unsigned char> b(t.size() * sizeof(X));
  if (!b.empty()) std::memcpy(b.data(), t.data(), b.size());
  return b;
}

// `got` against the float64 `want`: finite exactly where `want` is, relative L2 error over the finite entries.
template <class X, int R>
void compare(verdict& v, const char* name, const tensor<X, R>& got, const tensor<double, R>& want, double tol) {
  if (!v.failure.empty()) return;
  if (got.size() != want.size()) {
    v.failure = std::string(name) + ": size " + std::to_string(got.size()) + " vs reference " + std::to_string(want.size());
    return;
  }
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = static_cast<double>(got.data()[i]), r = want.data()[i];
    if (std::isfinite(x) != std::isfinite(r)) {
      v.failure = std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(x) + ", reference " +
                  std::to_string(r) + (std::isfinite(r) ? " (non-finite from finite inputs, or left unwritten)" : "");
      return;
    }
    if (std::isfinite(r)) num += (x - r) * (x - r), den += r * r;
  }
  const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  v.worst = std::max(v.worst, err / tol);
  if (!(err <= tol)) v.failure = std::string(name) + ": relative error " + std::to_string(err) + " > " + std::to_string(tol);
}


// The inputs of a plan, in input type T and their float64 twin.
template <class Rule, class T>
struct fuzz_inputs {
  random_case<Rule, T> c;
  random_case<Rule, double> ref;
  ccq_tensors<T> s;
  ccq_tensors<double> sref;
  tensor<T, 1> gamma;
  tensor<double, 1> gamma_ref;
  std::vector<float> A_log, dt_bias;

  explicit fuzz_inputs(const plan& p) : c(random_case<Rule, T>::make(p.shape)) {
    rng_t rng(p.shape.seed * 31ull + 7);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.5, 2.0);
    const index_t HV = c.shape.HV, K = c.shape.K;
    if (p.l2) {  // rows of any length: the kernel normalises them
      for (auto& x : c.q.values()) x = T(double(x) * unit(rng));
      for (auto& x : c.k.values()) x = T(double(x) * unit(rng));
    }
    if (p.normalize) {  // positive q, k: the normaliser s·q·z stays away from 0, as fla's tests draw them
      for (auto& x : c.q.values()) x = T(std::abs(double(x)) + 0.1);
      for (auto& x : c.k.values()) x = T(std::abs(double(x)) + 0.1);
    }
    if (p.gate) {  // logits
      for (auto& x : c.g.values()) x = T(normal(rng));
      for (auto& x : c.gk.values()) x = T(normal(rng));
      for (index_t hv = 0; hv < HV; ++hv) A_log.push_back(float(0.5 * normal(rng)));
      for (index_t i = 0; i < (testing::allocated(c.gk) ? HV * K : HV); ++i) dt_bias.push_back(float(0.5 * normal(rng)));
    }
    if (p.beta_act != beta_activation::none)
      for (auto& x : c.beta.values()) x = T(normal(rng));
    if (p.neg_inf) {  // a few gates of exactly 0
      auto& gv = c.g.size() ? c.g.values() : c.gk.values();
      if (!gv.empty())
        for (std::size_t j = 0, n = std::max<std::size_t>(1, gv.size() / 40); j < n; ++j)
          gv[std::uniform_int_distribution<std::size_t>(0, gv.size() - 1)(rng)] = T(-std::numeric_limits<double>::infinity());
    }
    if (p.g_gamma) {
      gamma = tensor<T, 1>({HV});
      for (auto& x : gamma.values()) x = T(p.gate ? normal(rng) : -std::log1p(std::exp(-normal(rng))));
    }
    ref = c.template cast<double>();
    gamma_ref = tensor<double, 1>({gamma.size() ? HV : 0});
    for (std::size_t i = 0; i < gamma.size(); ++i) gamma_ref.data()[i] = double(gamma.data()[i]);
    if (p.read != read_kind::identity) {
      s = ccq_tensors<T>::make(c.shape, c.N, p.ccq);
      sref = s.template cast<double>();
      if (c.shape.T == 0) {  // cast() leaves tensors of no elements unmade (not given); T = 0 still gives them
        const index_t B = c.shape.B;
        sref.lambda = tensor<double, 3>({B, 0, HV}), sref.q_tilde = tensor<double, 4>({B, 0, HV, K});
        if (p.ccq.explicit_log_decay) sref.log_decay = tensor<double, 3>({B, 0, HV});
      }
    }
  }

  // The options of plan p on arguments over this case (host or reference).
  template <class U, class SU, class CT>
  void apply(const plan& p, arguments<U, SU>& a, CT& stats, tensor<U, 1>& gam) {
    if (p.read != read_kind::identity) stats.attach(a);
    if (p.g_gamma)
      a.g = strided<3>(static_cast<const U*>(gam.data()), {c.shape.B, c.shape.T, c.shape.HV}, {0, 0, 1});
    a.qk_l2norm = p.l2;
    a.beta_act = p.beta_act;
    a.normalize = p.normalize;
    if (p.scale) a.scale = p.scale;
    a.chunk_size = p.chunk;
    if (p.gate) {
      a.gate.A_log = contiguous<1>(static_cast<const float*>(A_log.data()), {index_t(A_log.size())});
      a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias.data()), {index_t(dt_bias.size())});
      if (p.lower_bound) a.gate.lower_bound = -5.0f;
    }
  }
};


// Gradient buffers of one call in U (gradients) and SU (states), 0xFF-filled.
template <class U, class SU>
struct grad_buffers : testing::gradient_buffers<U, SU> {
  template <class A>
  gradients<U, SU> make(const plan& p, const A& a, const view<const U, 4>& d_o, const view<const SU, 4>& dht, index_t N,
                        const case_shape& sh) {
    return testing::gradient_buffers<U, SU>::make(a, d_o, dht, {N, sh.B, sh.T, sh.H, sh.HV, sh.K, sh.V}, p.g_gamma,
                                                  p.read != read_kind::identity, [](auto& t) { poison(t); });
  }
};

// `normalize` (additive rule): o_t = S_tᵀ(s q_t) / (s q_t·z_t + 1e-10) is homogeneous of degree 0 in q_t when K = 1
// (q_t cancels: o_t = S_t / z_t) or when no sequence has more than one token and there is no initial state
// (o_t = v_t). There dq is, but for the 1e-10 term, exactly 0 — the sum of A = s S_t (d_o/den) and
// B = −z_t (d_o·o_t) / (q_t·z_t), equal and opposite — and the relative measure divides rounding by nothing
// (seed 20261207 cases 136, 1305, 1591: 140–2500× the bound). Such a dq is judged by the same bound against the
// scale of its terms: ‖dq − dq_ref‖ / ‖Σ_{value heads of the group} |B|‖ (through the L2 norm's 1/‖q‖ when on).
inline bool normalize_dq_vanishes(const plan& p, const case_shape& sh) {
  if (!p.normalize) return false;
  if (sh.K == 1) return true;
  if (sh.initial_state) return false;
  if (sh.seqlens.empty()) return sh.T <= 1;
  return std::all_of(sh.seqlens.begin(), sh.seqlens.end(), [](std::int64_t L) { return L <= 1; });
}

// ‖Σ_{hv in the group of h} |B_{t,hv}|‖ over (b, t, h, i) for the float64 twin (header of normalize_dq_vanishes);
// o is the reference forward's output.
template <class Rule>
double normalize_dq_term_scale(const plan& p, random_case<Rule, double>& ref, const tensor<double, 4>& d_o) {
  const case_shape& sh = ref.shape;
  const index_t B = sh.B, T_ = sh.T, H = sh.H, HV = sh.HV, K = sh.K, V = sh.V, G = HV / H;
  const auto q = testing::logical4<const double>(ref.q, sh.head_first);
  const auto k = testing::logical4<const double>(ref.k, sh.head_first);
  const auto unit = [&](const auto& x, index_t b, index_t t, index_t h, std::vector<double>& out) {
    double ss = 0;
    for (index_t i = 0; i < K; ++i) out[i] = x(b, t, h, i), ss += out[i] * out[i];
    const double n = p.l2 ? std::sqrt(ss + 1e-6) : 1.0;
    for (index_t i = 0; i < K; ++i) out[i] /= n;
    return n;
  };
  // sequences as (b, first token, length)
  std::vector<std::array<index_t, 3>> seqs;
  if (ref.cu_seqlens.empty())
    for (index_t b = 0; b < B; ++b) seqs.push_back({b, 0, T_});
  else
    for (std::size_t n = 0; n + 1 < ref.cu_seqlens.size(); ++n)
      seqs.push_back({0, index_t(ref.cu_seqlens[n]), index_t(ref.cu_seqlens[n + 1] - ref.cu_seqlens[n])});
  std::vector<double> qh(static_cast<std::size_t>(K)), kh(qh), z(static_cast<std::size_t>(HV * K)), sum(qh);
  double total = 0;
  for (const auto& [b, t0, L] : seqs) {
    std::fill(z.begin(), z.end(), 0.0);
    for (index_t t = t0; t < t0 + L; ++t)
      for (index_t h = 0; h < H; ++h) {
        const double n = unit(q, b, t, h, qh);
        unit(k, b, t, h, kh);
        std::fill(sum.begin(), sum.end(), 0.0);
        for (index_t hv = h * G; hv < (h + 1) * G; ++hv) {
          double* zt = z.data() + hv * K;
          double qz = 0, dod = 0;
          for (index_t i = 0; i < K; ++i) zt[i] += kh[i], qz += qh[i] * zt[i];
          for (index_t j = 0; j < V; ++j) dod += d_o(b, t, hv, j) * ref.o(b, t, hv, j);
          for (index_t i = 0; i < K; ++i) sum[i] += std::abs(zt[i] * dod / qz);
        }
        for (index_t i = 0; i < K; ++i) total += (sum[i] / n) * (sum[i] / n);
      }
  }
  return std::sqrt(total);
}

// `got` against `want` by ‖got − want‖ / scale (finite exactly where `want` is, as compare()).
template <class X, int R>
void compare_to_scale(verdict& v, const char* name, const tensor<X, R>& got, const tensor<double, R>& want, double scale,
                      double tol) {
  if (!v.failure.empty()) return;
  verdict finite;  // compare()'s size and finiteness checks, its relative error unused
  compare(finite, name, got, want, std::numeric_limits<double>::infinity());
  if (!finite.failure.empty()) return void(v.failure = finite.failure);
  double num = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = static_cast<double>(got.data()[i]), r = want.data()[i];
    if (std::isfinite(r)) num += (x - r) * (x - r);
  }
  const double err = scale > 0 ? std::sqrt(num) / scale : std::sqrt(num);
  v.worst = std::max(v.worst, err / tol);
  if (!(err <= tol))
    v.failure = std::string(name) + ": error " + std::to_string(err) + " of its terms' scale > " + std::to_string(tol);
}


}