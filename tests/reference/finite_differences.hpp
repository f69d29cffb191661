// tests/reference/finite_differences.hpp — checks linea::reference::backward against central finite differences of
// the float64 forward (linea::reference::recurrent) on one small random case.
//
//   fd_case<kda, read::identity> c(shape, {.qk_l2norm = true});
//   c.check();   // every input's gradient: ‖backward − fd‖ / ‖fd‖ ≤ fd_tolerance
//
// The loss is L = ⟨o, do⟩ + ⟨S_T, dS_T⟩ with random do, dS_T; each input entry x is nudged by ±h and
// dL/dx ≈ (L(x + h) − L(x − h)) / 2h.
#pragma once
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <linea/linea.hpp>
#include <linea/reference/backward.hpp>

#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"

namespace linea::testing {

// Central differences with h = 2^-17 (≈ 7.6e-6, exactly representable, so x ± h is exact for the float gate
// parameters too): truncation error O(h²) ≈ 1e-10 and rounding ≈ 1e-16 / h ≈ 1e-11 relative, far below the bound.
inline constexpr double fd_step = 1.0 / 131072.0;
inline constexpr double fd_tolerance = 1e-6;

// Options of the forward that a case turns on (and how its inputs are drawn for them).
struct fd_options {
  bool qk_l2norm = false;          // raw q, k of non-unit norm
  bool gate = false;               // in-kernel gates: g/gk hold logits; A_log, dt_bias given
  bool dt_bias = true;             //   with dt_bias
  bool lower_bound = false;        //   KDA-style lower bound
  beta_activation beta_act = beta_activation::none;
  bool normalize = false;          // additive rule's normaliser (positive q, k keep the denominator away from 0)
  bool g_gamma = false;            // scalar gate as one value per value head: a view with stride 0 over b, t
  ccq_options ccq;
  bool fd_z0 = true;               // whether ccq.z0 gets a finite difference: not where the read is discontinuous
                                   // in it (a z0 that makes z_t = 0, where Σ_t = 0 but C_t / z_t → ∞ beside it)
};

template <class Rule, class Read>
class fd_case {
  static constexpr bool is_ccq = !Read::is_identity;

 public:
  fd_case(const case_shape& shape, const fd_options& opt) : opt_(opt) {
    c_ = random_case<Rule, double>::make(shape);
    if constexpr (is_ccq) s_ = ccq_tensors<double>::make(c_.shape, c_.N, opt.ccq);
    std::mt19937 rng(shape.seed + 7);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(0.5, 2.0);
    const index_t HV = c_.shape.HV, K = c_.shape.K;
    if (opt.qk_l2norm) {
      for (auto& x : c_.q.values()) x *= unit(rng);
      for (auto& x : c_.k.values()) x *= unit(rng);
    }
    if (opt.normalize) {
      for (auto& x : c_.q.values()) x = std::abs(x) + 0.1;
      for (auto& x : c_.k.values()) x = std::abs(x) + 0.1;
    }
    if (opt.gate) {  // logits N(0, 1); A_log, dt_bias on a 1/64 grid so that ± h stays exact in float
      for (auto& x : c_.g.values()) x = normal(rng);
      for (auto& x : c_.gk.values()) x = normal(rng);
      for (index_t hv = 0; hv < HV; ++hv) A_log_.push_back(float(std::round(32 * normal(rng) * 0.5) / 64));
      if (opt.dt_bias)
        for (index_t i = 0; i < (c_.gk.size() ? HV * K : HV); ++i)
          dt_bias_.push_back(float(std::round(64 * normal(rng) * 0.5) / 64));
    }
    if (opt.beta_act != beta_activation::none)
      for (auto& x : c_.beta.values()) x = normal(rng);
    if (opt.g_gamma) {
      gamma_ = tensor<double, 1>({HV});
      for (auto& x : gamma_.values()) x = -std::log1p(std::exp(-normal(rng)));
    }
    d_o_ = tensor<double, 4>(c_.o.extents());
    dht_ = tensor<double, 4>(c_.ht.extents());
    for (auto& x : d_o_.values()) x = normal(rng);
    for (auto& x : dht_.values()) x = normal(rng);
  }

  arguments<double> args() {
    arguments<double> a = c_.args();
    if constexpr (is_ccq) s_.attach(a);
    if (opt_.g_gamma)
      a.g = strided<3>(static_cast<const double*>(gamma_.data()), {c_.shape.B, c_.shape.T, c_.shape.HV}, {0, 0, 1});
    a.qk_l2norm = opt_.qk_l2norm;
    a.beta_act = opt_.beta_act;
    a.normalize = opt_.normalize;
    if (opt_.gate) {
      a.gate.A_log = contiguous<1>(static_cast<const float*>(A_log_.data()), {index_t(A_log_.size())});
      if (!dt_bias_.empty())
        a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias_.data()), {index_t(dt_bias_.size())});
      if (opt_.lower_bound) a.gate.lower_bound = -5.0f;
    }
    return a;
  }

  double loss() {
    arguments<double> a = args();
    reference::recurrent<Rule, Read>(a);
    double L = 0;
    for (std::size_t i = 0; i < c_.o.size(); ++i) L += c_.o.data()[i] * d_o_.data()[i];
    for (std::size_t i = 0; i < c_.ht.size(); ++i) L += c_.ht.data()[i] * dht_.data()[i];
    return L;
  }

  // Runs the backward, then compares every input's gradient with finite differences. Returns the number of
  // gradient tensors checked.
  int check() {
    const arguments<double> a = args();
    gradients<double> g{.d_o = d_o_, .d_final_state = dht_};
    std::vector<input> inputs;
    add(inputs, "q", c_.q.values(), g.dq, a.q);
    add(inputs, "k", c_.k.values(), g.dk, a.k);
    add(inputs, "v", c_.v.values(), g.dv, a.v);
    if (opt_.g_gamma) add_gamma(inputs, g);
    else if (c_.g.size()) add(inputs, "g", c_.g.values(), g.dg, a.g);
    if (c_.gk.size()) add(inputs, "gk", c_.gk.values(), g.dgk, a.gk);
    if (c_.beta.size()) add(inputs, "beta", c_.beta.values(), g.dbeta, a.beta);
    if (c_.b.size()) add(inputs, "b", c_.b.values(), g.db, a.b);
    if (c_.w.size()) add(inputs, "w", c_.w.values(), g.dw, a.w);
    add(inputs, "initial_state", c_.h0, g.d_initial_state, {c_.N, c_.shape.HV, c_.shape.K, c_.shape.V});
    if (!A_log_.empty()) add(inputs, "A_log", A_log_, g.dA_log, a.gate.A_log);
    if (!dt_bias_.empty()) add(inputs, "dt_bias", dt_bias_, g.ddt_bias, a.gate.dt_bias);
    if constexpr (is_ccq) {
      add(inputs, "ccq.lambda", s_.lambda.values(), g.dlambda, a.ccq.lambda);
      if (s_.log_decay.size()) add(inputs, "ccq.log_decay", s_.log_decay.values(), g.dccq_log_decay, a.ccq.log_decay);
      if (s_.C0.size()) {
        add(inputs, "ccq.C0", s_.C0.values(), g.dC0, a.ccq.C0);
        add(inputs, "ccq.m0", s_.m0.values(), g.dm0, a.ccq.m0);
        if (opt_.fd_z0) add(inputs, "ccq.z0", s_.z0.values(), g.dz0, a.ccq.z0);
      }
    }
    reference::backward<Rule, Read>(a, g);

    for (input& in : inputs) {
      std::vector<double> fd(in.size);
      for (std::size_t i = 0; i < in.size; ++i) {
        in.nudge(i, +fd_step);
        const double up = loss();
        in.nudge(i, -2 * fd_step);
        const double down = loss();
        in.nudge(i, +fd_step);
        fd[i] = (up - down) / (2 * fd_step);
      }
      const double err = relative_error(in.grad->data(), fd.data(), in.size);
      CAPTURE(in.name);
      CAPTURE(err);
      CHECK(err <= fd_tolerance);
      CHECK(all_finite(*in.grad));
    }
    return static_cast<int>(inputs.size());
  }

 private:
  struct input {
    std::string name;
    std::size_t size;
    std::function<void(std::size_t, double)> nudge;
    std::shared_ptr<tensor<double, 1>> grad;  // the backward's gradient, flat
  };

  // An input stored in `values` (read by the forward through `in`): its gradient view `out` gets the same
  // extents and strides (head-first stays head-first) over a fresh buffer laid out like `values`.
  template <class E, class InView, class View>
  void add(std::vector<input>& inputs, const std::string& name, std::vector<E>& values, View& out, const InView& in) {
    auto grad = std::make_shared<tensor<double, 1>>(std::array<index_t, 1>{index_t(values.size())}, std::nan(""));
    using X = typename View::element_type;
    out.ptr = static_cast<X*>(grad->data());
    for (int r = 0; r < View::rank; ++r) out.ext[r] = in.extent(r), out.str[r] = in.stride(r);
    inputs.push_back({name, values.size(), [&values](std::size_t i, double d) { values[i] = E(values[i] + E(d)); }, grad});
  }
  template <class View>
  void add(std::vector<input>& inputs, const std::string& name, tensor<double, 4>& h0, View& out,
           std::array<index_t, 4> ext) {
    if (!h0.size()) h0 = tensor<double, 4>(ext);  // no initial state given: the gradient at S_0 = 0
    auto grad = std::make_shared<tensor<double, 1>>(std::array<index_t, 1>{index_t(h0.size())}, std::nan(""));
    out = contiguous<4>(grad->data(), ext);
    inputs.push_back({name, h0.size(), [&h0](std::size_t i, double d) { h0.data()[i] += d; }, grad});
  }
  // g_gamma: the gradient view has the same stride-0 layout as g, so it receives the sum over b and t.
  void add_gamma(std::vector<input>& inputs, gradients<double>& g) {
    auto grad = std::make_shared<tensor<double, 1>>(std::array<index_t, 1>{c_.shape.HV}, std::nan(""));
    g.dg = strided<3>(grad->data(), {c_.shape.B, c_.shape.T, c_.shape.HV}, {0, 0, 1});
    inputs.push_back({"g_gamma", gamma_.size(), [this](std::size_t i, double d) { gamma_.data()[i] += d; }, grad});
  }

  fd_options opt_;
  random_case<Rule, double> c_;
  ccq_tensors<double> s_;
  tensor<double, 4> d_o_, dht_;
  tensor<double, 1> gamma_;
  std::vector<float> A_log_, dt_bias_;
};

}  // namespace linea::testing
