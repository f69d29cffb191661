// tests/forms/backward_case.hpp — one random backward problem in input type T and its float64 twin: the forward's
// inputs (with any option), dL/do, dL/dS_T, and a buffer for every gradient the forward's inputs have.
//
//   backward_case<kda, read::identity, float> c(shape, {.qk_l2norm = true});
//   linea::backward<kda>(c.args(), c.grads());                       // into c's buffers
//   c.check_against_reference();                                     // SPEC §6 per gradient tensor
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <linea/linea.hpp>

#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/gradient_buffers.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace linea::testing {

struct backward_options {
  bool qk_l2norm = false;
  bool gate = false;         // in-kernel gates (g / gk hold logits), with dt_bias
  bool lower_bound = false;
  beta_activation beta_act = beta_activation::none;
  bool normalize = false;    // additive rule only (positive q, k)
  bool g_gamma = false;      // scalar gate as a stride-0 view
  std::optional<double> scale;
  index_t chunk_size = 16;
  int threads = 1;
  ccq_options ccq;
};

template <class Rule, class Read, class T>
class backward_case {
  using S = accumulate_t<T>;
  static constexpr bool is_ccq = !Read::is_identity;

 public:
  backward_case(const case_shape& shape, const backward_options& opt) : opt_(opt) {
    auto base = random_case<Rule, double>::make(shape);
    std::mt19937 rng(shape.seed + 5);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.5, 2.0);
    const index_t HV = base.shape.HV, K = base.shape.K;
    if (opt.qk_l2norm) {
      for (auto& x : base.q.values()) x *= unit(rng);
      for (auto& x : base.k.values()) x *= unit(rng);
    }
    if (opt.normalize) {
      for (auto& x : base.q.values()) x = std::abs(x) + 0.1;
      for (auto& x : base.k.values()) x = std::abs(x) + 0.1;
    }
    if (opt.gate) {
      for (auto& x : base.g.values()) x = normal(rng);
      for (auto& x : base.gk.values()) x = normal(rng);
      for (index_t hv = 0; hv < HV; ++hv) A_log_.push_back(float(0.5 * normal(rng)));
      for (index_t i = 0; i < (base.gk.size() ? HV * K : HV); ++i) dt_bias_.push_back(float(0.5 * normal(rng)));
    }
    if (opt.beta_act != beta_activation::none)
      for (auto& x : base.beta.values()) x = normal(rng);
    low_ = base.template cast<T>();
    ref_ = low_.template cast<double>();  // the same (rounded) values
    if (opt.g_gamma) {
      gamma_ = tensor<T, 1>({HV});
      for (auto& x : gamma_.values()) x = T(-std::log1p(std::exp(-normal(rng))));
      gamma_ref_ = tensor<double, 1>({HV});
      for (index_t i = 0; i < HV; ++i) gamma_ref_(i) = double(gamma_(i));
    }
    if constexpr (is_ccq) {
      s_ = ccq_tensors<T>::make(low_.shape, low_.N, opt.ccq);
      s_ref_ = s_.template cast<double>();
    }
    d_o_ = tensor<T, 4>(low_.o.extents());
    dht_ = tensor<S, 4>(low_.ht.extents());
    for (auto& x : d_o_.values()) x = T(normal(rng));
    for (auto& x : dht_.values()) x = S(normal(rng));
    d_o_ref_ = tensor<double, 4>(d_o_.extents());
    dht_ref_ = tensor<double, 4>(dht_.extents());
    for (std::size_t i = 0; i < d_o_.size(); ++i) d_o_ref_.data()[i] = double(d_o_.data()[i]);
    for (std::size_t i = 0; i < dht_.size(); ++i) dht_ref_.data()[i] = double(dht_.data()[i]);
  }

  arguments<T, S> args() { return with_options(low_.args(), s_, gamma_); }
  arguments<double> ref_args() { return with_options(ref_.args(), s_ref_, gamma_ref_); }

  // Fresh NaN-filled buffers for every gradient; the views of them.
  gradients<T, S> grads() { return make_grads(args(), out_, d_o_, dht_); }
  gradients<double> ref_grads() { return make_grads(ref_args(), ref_out_, d_o_ref_, dht_ref_); }

  const gradient_buffers<T>& out() const { return out_; }

  // The float64 reference backward on the twin (into fresh NaN-filled buffers), for checks other than the norm.
  gradient_buffers<double>& reference_out() {
    reference::backward<Rule, Read>(ref_args(), ref_grads());
    return ref_out_;
  }

  // Sets one entry of dL/do, or of dL/dS_T, in both twins (a NaN or Inf upstream gradient).
  void set_d_o(index_t b, index_t t, index_t hv, index_t j, double x) { d_o_(b, t, hv, j) = T(x), d_o_ref_(b, t, hv, j) = x; }
  void set_d_final_state(index_t n, index_t hv, index_t i, index_t j, double x) {
    dht_(n, hv, i, j) = S(x), dht_ref_(n, hv, i, j) = x;
  }

  // The reference backward on the float64 twin, then every gradient of `out()` against it (SPEC §6 for T).
  void check_against_reference(double bound = gradient_tolerance_for<T>()) {
    reference_out();
    compare("dq", out_.dq, ref_out_.dq, bound), compare("dk", out_.dk, ref_out_.dk, bound);
    compare("dv", out_.dv, ref_out_.dv, bound), compare("dg", out_.dg, ref_out_.dg, bound);
    compare("dg_gamma", out_.dgamma, ref_out_.dgamma, bound), compare("dgk", out_.dgk, ref_out_.dgk, bound);
    compare("dbeta", out_.dbeta, ref_out_.dbeta, bound), compare("db", out_.db, ref_out_.db, bound);
    compare("dw", out_.dw, ref_out_.dw, bound), compare("dh0", out_.dh0, ref_out_.dh0, bound);
    compare("dA_log", out_.dA_log, ref_out_.dA_log, bound), compare("ddt_bias", out_.ddt_bias, ref_out_.ddt_bias, bound);
    compare("dlambda", out_.dlambda, ref_out_.dlambda, bound);
    compare("dccq_log_decay", out_.dccq_log_decay, ref_out_.dccq_log_decay, bound);
    compare("dC0", out_.dC0, ref_out_.dC0, bound), compare("dm0", out_.dm0, ref_out_.dm0, bound);
    compare("dz0", out_.dz0, ref_out_.dz0, bound);
  }

  int compared = 0;  // gradient tensors compared by the last check

 private:
  template <class U, class SU, class CT>
  arguments<U, SU> with_options(arguments<U, SU> a, CT& s, tensor<U, 1>& gamma) {
    if constexpr (is_ccq) s.attach(a);
    if (opt_.g_gamma)
      a.g = strided<3>(static_cast<const U*>(gamma.data()), {low_.shape.B, low_.shape.T, low_.shape.HV}, {0, 0, 1});
    a.qk_l2norm = opt_.qk_l2norm;
    a.beta_act = opt_.beta_act;
    a.normalize = opt_.normalize;
    a.scale = opt_.scale;
    a.chunk_size = opt_.chunk_size;
    a.threads = opt_.threads;
    if (opt_.gate) {
      a.gate.A_log = contiguous<1>(static_cast<const float*>(A_log_.data()), {index_t(A_log_.size())});
      a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias_.data()), {index_t(dt_bias_.size())});
      if (opt_.lower_bound) a.gate.lower_bound = -5.0f;
    }
    return a;
  }

  // Every gradient buffer NaN-filled, so that a gradient left unwritten fails.
  template <class U, class SU>
  gradients<U, SU> make_grads(const arguments<U, SU>& a, gradient_buffers<U, SU>& b, tensor<U, 4>& d_o,
                              tensor<SU, 4>& dht) {
    const auto& sh = low_.shape;
    const auto nan_fill = [](auto& t) {
      for (auto& x : t.values()) x = std::remove_reference_t<decltype(x)>(std::nan(""));
    };
    return b.make(a, d_o, dht, {low_.N, sh.B, sh.T, sh.H, sh.HV, sh.K, sh.V}, opt_.g_gamma, is_ccq, nan_fill);
  }

  template <class X, class Y, int Rank>
  void compare(const char* name, const tensor<X, Rank>& x, const tensor<Y, Rank>& ref, double bound) {
    if (x.size() == 0 && ref.size() == 0) return;
    REQUIRE(x.size() == ref.size());
    const double err = relative_error(x.data(), ref.data(), x.size());
    const std::string gradient = name;
    CAPTURE(gradient);
    CAPTURE(err);
    CHECK(err <= bound);  // NaN fails
    CHECK(all_finite(x));
    ++compared;
  }

  backward_options opt_;
  random_case<Rule, T> low_;
  random_case<Rule, double> ref_;
  ccq_tensors<T> s_;
  ccq_tensors<double> s_ref_;
  tensor<T, 1> gamma_;
  tensor<double, 1> gamma_ref_;
  tensor<T, 4> d_o_;
  tensor<S, 4> dht_;
  tensor<double, 4> d_o_ref_, dht_ref_;
  std::vector<float> A_log_, dt_bias_;
  gradient_buffers<T> out_;
  gradient_buffers<double> ref_out_;
};

}  // namespace linea::testing
