// tests/fuzz/fuzz_backward.hpp — the fuzz harness's backward category: a random case of fuzz_case.hpp's plans (rule,
// shape, GVA, packed sequences, initial state, dL/dS_T, L2 norm, chunk size, threads; strided input layouts; in-kernel
// gates with dA_log and ddt_bias, β's activation, the scale) through
// linea::backward on the CPU backend in float32, every gradient against reference::backward in float64 at SPEC §6's
// float32 bound (1e-4 relative per gradient tensor, finite exactly where the reference is). No twist: the backward's
// bad inputs and aliasing have their own tests (tests/forms/backward_test.cpp, tests/core/aliasing_test.cpp).
#pragma once
#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <linea/reference/backward.hpp>

#include "fuzz/fuzz_run.hpp"  // to_double, the inputs' conventions
#include "support/tolerance.hpp"

namespace linea::fuzz {

template <class Rule>
std::string run_backward_case(rng_t& rng, const case_plan& p) {
  const index_t B = p.B, T = p.T, H = p.H, HV = p.G * p.H, K = p.K, V = p.V;
  const index_t N = p.cu.empty() ? B : static_cast<index_t>(p.cu.size()) - 1;
  std::normal_distribution<double> normal(0.0, 1.0);
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const float c = canary();
  constexpr auto inputs = Rule::inputs;
  // fla's in-kernel activations, each in about a third of the cases where the rule has the input: the decay from
  // gate logits (A_log, dt_bias, sometimes a lower bound), β from logits (σ or 2σ), and a scale of its own
  std::uniform_int_distribution<int> die(0, 2);
  constexpr bool has_gate = reads(inputs, input::g) || reads(inputs, input::gk);
  const bool gated = has_gate && die(rng) == 0, bounded = gated && die(rng) == 0;
  const auto beta_act = reads(inputs, input::beta) ? static_cast<beta_activation>(die(rng)) : beta_activation::none;
  const double scale = die(rng) == 0 ? 0.25 + std::uniform_real_distribution<double>(0, 1)(rng) : 0.0;
  const index_t biases = reads(inputs, input::gk) ? HV * K : HV;
  std::vector<float> A_log, dt_bias;
  if (gated) {
    for (index_t i = 0; i < HV; ++i) A_log.push_back(float(0.5 * normal(rng)));
    for (index_t i = 0; i < biases; ++i) dt_bias.push_back(float(0.5 * normal(rng)));
  }
  const auto gate_value = [&](double z) { return gated ? z : std::log(sig(z)); };  // a logit, or logsigmoid of it
  const auto beta_value = [&](double z) { return beta_act != beta_activation::none ? z : sig(z); };

  // inputs in random layouts, as the forward's category draws them (unit key rows; gates as fla's layers make them)
  auto q = random_layout<float, 4>(rng, {B, T, H, K}, c), k = random_layout<float, 4>(rng, {B, T, H, K}, c);
  auto v = random_layout<float, 4>(rng, {B, T, HV, V}, c), d_o = random_layout<float, 4>(rng, {B, T, HV, V}, c);
  for (index_t i = 0; i < q.size(); ++i) q.at(i) = float(normal(rng));
  for (index_t r = 0; r < k.size() / std::max<index_t>(K, 1); ++r) {
    std::vector<double> row(static_cast<std::size_t>(K));
    double ss = 0;
    for (auto& x : row) x = normal(rng), ss += x * x;
    for (index_t i = 0; i < K; ++i) k.at(r * K + i) = float(row[static_cast<std::size_t>(i)] / std::sqrt(ss));
  }
  for (index_t i = 0; i < v.size(); ++i) v.at(i) = float(normal(rng));
  for (index_t i = 0; i < d_o.size(); ++i) d_o.at(i) = float(normal(rng));
  fuzz_tensor<float, 3> g, beta;
  fuzz_tensor<float, 4> gk, b, w, h0, dht;
  if constexpr (reads(inputs, input::g)) {
    g = random_layout<float, 3>(rng, {B, T, HV}, c);
    for (index_t i = 0; i < g.size(); ++i) g.at(i) = float(gate_value(normal(rng)));
  }
  if constexpr (reads(inputs, input::gk)) {
    gk = random_layout<float, 4>(rng, {B, T, HV, K}, c);
    for (index_t i = 0; i < gk.size(); ++i) gk.at(i) = float(gate_value(normal(rng)));
  }
  if constexpr (reads(inputs, input::beta)) {
    beta = random_layout<float, 3>(rng, {B, T, HV}, c);
    for (index_t i = 0; i < beta.size(); ++i) beta.at(i) = float(beta_value(normal(rng)));
  }
  if constexpr (reads(inputs, input::b | input::w)) {
    b = random_layout<float, 4>(rng, {B, T, HV, K}, c), w = random_layout<float, 4>(rng, {B, T, HV, V}, c);
    for (index_t i = 0; i < b.size(); ++i) b.at(i) = float(sig(normal(rng)));
    for (index_t i = 0; i < w.size(); ++i) w.at(i) = float(sig(normal(rng)));
  }
  if (p.h0) {
    h0 = random_layout<float, 4>(rng, {N, HV, K, V}, c);
    for (index_t i = 0; i < h0.size(); ++i) h0.at(i) = float(normal(rng));
  }
  if (p.ht) {  // dL/dS_T given
    dht = random_layout<float, 4>(rng, {N, HV, K, V}, c);
    for (index_t i = 0; i < dht.size(); ++i) dht.at(i) = float(normal(rng));
  }

  const gate_activation gate = gated ? gate_activation{.A_log = contiguous<1>(std::span<const float>(A_log), {HV}),
                                                      .dt_bias = contiguous<1>(std::span<const float>(dt_bias), {biases}),
                                                      .lower_bound = bounded ? std::optional<float>(-5.f) : std::nullopt}
                                     : gate_activation{};

  // The float64 reference on the same values — or, for the conditioning estimate below, on every input, d_o and
  // dL/dS_T multiplied by 1 ± eps (random signs, a generator of its own: the case's draws stay as they are). Not the
  // in-kernel gate's A_log and dt_bias: the gate takes them as float, where 1 ± 2⁻²⁴ rounds back to the same value;
  // the logits they shift are perturbed.
  struct reference_grads {
    tensor<double, 4> dq, dk, dv, dgk, db, dw, dh0;
    tensor<double, 3> dg, dbeta;
    tensor<double, 1> dA, ddt;
  };
  const auto reference_backward = [&](double eps) {
    std::mt19937_64 signs(20261204);
    const auto in = [&](const auto& x) {
      auto t = to_double(x);
      if (eps != 0)
        for (auto& y : t.values()) y *= 1 + ((signs() & 1) ? eps : -eps);
      return t;
    };
    tensor<double, 4> rq = in(q), rk = in(k), rv = in(v), rdo = in(d_o), rgk = in(gk), rb = in(b), rw = in(w),
                      rh0 = in(h0), rdht = in(dht);
    tensor<double, 3> rg = in(g), rbeta = in(beta);
    arguments<double> ra;
    ra.q = rq, ra.k = rk, ra.v = rv;
    if (!g.mem.empty()) ra.g = rg;
    if (!gk.mem.empty()) ra.gk = rgk;
    if (!beta.mem.empty()) ra.beta = rbeta;
    if (!b.mem.empty()) ra.b = rb, ra.w = rw;
    if (p.h0) ra.initial_state = rh0;
    ra.cu_seqlens = p.cu;
    ra.qk_l2norm = p.l2;
    ra.gate = gate, ra.beta_act = beta_act, ra.scale = scale;
    reference_grads r{.dq = tensor<double, 4>({B, T, H, K}), .dk = tensor<double, 4>({B, T, H, K}),
                      .dv = tensor<double, 4>({B, T, HV, V}), .dgk = tensor<double, 4>({B, T, HV, K}),
                      .db = tensor<double, 4>({B, T, HV, K}), .dw = tensor<double, 4>({B, T, HV, V}),
                      .dh0 = tensor<double, 4>({N, HV, K, V}), .dg = tensor<double, 3>({B, T, HV}),
                      .dbeta = tensor<double, 3>({B, T, HV}), .dA = tensor<double, 1>({HV}),
                      .ddt = tensor<double, 1>({biases})};
    gradients<double> rgr{.d_o = rdo, .dq = r.dq, .dk = r.dk, .dv = r.dv, .d_initial_state = r.dh0};
    if (p.ht) rgr.d_final_state = rdht;
    if (!g.mem.empty()) rgr.dg = r.dg;
    if (!gk.mem.empty()) rgr.dgk = r.dgk;
    if (!beta.mem.empty()) rgr.dbeta = r.dbeta;
    if (!b.mem.empty()) rgr.db = r.db, rgr.dw = r.dw;
    if (gated) rgr.dA_log = r.dA, rgr.ddt_bias = r.ddt;
    reference::backward<Rule>(ra, rgr);
    return r;
  };
  const reference_grads R = reference_backward(0);

  // the CPU backend in float32
  arguments<float> a;
  a.q = q.in(), a.k = k.in(), a.v = v.in();
  if (!g.mem.empty()) a.g = g.in();
  if (!gk.mem.empty()) a.gk = gk.in();
  if (!beta.mem.empty()) a.beta = beta.in();
  if (!b.mem.empty()) a.b = b.in(), a.w = w.in();
  if (p.h0) a.initial_state = h0.in();
  a.cu_seqlens = p.cu;
  a.qk_l2norm = p.l2;
  a.chunk_size = p.chunk;
  a.threads = p.threads;
  a.gate = gate, a.beta_act = beta_act, a.scale = scale;
  auto dq = random_layout<float, 4>(rng, {B, T, H, K}, c), dk = random_layout<float, 4>(rng, {B, T, H, K}, c);
  auto dv = random_layout<float, 4>(rng, {B, T, HV, V}, c), dh0 = random_layout<float, 4>(rng, {N, HV, K, V}, c);
  fuzz_tensor<float, 3> dg, dbeta;
  fuzz_tensor<float, 4> dgk, db, dw;
  gradients<float> gr{.d_o = d_o.in(), .dq = dq.out(), .dk = dk.out(), .dv = dv.out(), .d_initial_state = dh0.out()};
  if (p.ht) gr.d_final_state = dht.in();
  if (!g.mem.empty()) dg = random_layout<float, 3>(rng, {B, T, HV}, c), gr.dg = dg.out();
  if (!gk.mem.empty()) dgk = random_layout<float, 4>(rng, {B, T, HV, K}, c), gr.dgk = dgk.out();
  if (!beta.mem.empty()) dbeta = random_layout<float, 3>(rng, {B, T, HV}, c), gr.dbeta = dbeta.out();
  if (!b.mem.empty()) {
    db = random_layout<float, 4>(rng, {B, T, HV, K}, c), dw = random_layout<float, 4>(rng, {B, T, HV, V}, c);
    gr.db = db.out(), gr.dw = dw.out();
  }
  std::vector<float> dA(static_cast<std::size_t>(HV), c), ddt(static_cast<std::size_t>(biases), c);
  if (gated) gr.dA_log = contiguous<1>(std::span(dA), {HV}), gr.ddt_bias = contiguous<1>(std::span(ddt), {biases});
  try {
    linea::backward<Rule, read::identity, backend::cpu>(a, gr);
  } catch (const linea::error& e) {
    return std::string("rejected a case the reference accepts: ") + e.what();
  }

  const double tol = linea::testing::gradient_tolerance_for<float>();
  // Relative to max(‖ref‖, floor): under strong decays over many tokens (log α down to −5 a token with a lower bound)
  // a gradient such as dL/dS_0 falls below float32's range (1.2e-38), where float32 keeps no relative accuracy; the
  // floor (1e-30 of a tensor's norm) leaves every tensor within float32's normal range judged relatively.
  constexpr double norm_floor = 1e-30;
  // A tensor over the bound passes as ill-conditioned (and is printed) where its own conditioning explains the
  // error: the reference moves by δ (relative) when every input changes by one float32 rounding (2⁻²⁴, random
  // signs), and δ ≥ tol / 2 with the error ≤ 4 δ — the criterion of fuzz_conditioning.hpp and the CUDA driver. A
  // gradient that is a sum cancelling to 1e-4 of its terms (dβ of a one-token delta step: seed 20261204 case 3678)
  // is such a case; the estimate is computed only for a tensor that missed the bound.
  std::optional<reference_grads> moved;
  std::string ill;
  // out against R.*grad (and, when it misses the bound, the moved reference's .*grad: the estimate)
  const auto judge = [&](const char* name, const auto& out, auto reference_grads::*grad) -> std::string {
    const auto& ref = R.*grad;
    const distance d = measure(out, ref, norm_floor);
    const std::string diff = verdict(name, d, tol);
    if (diff.empty() || d.mismatch >= 0) return diff;
    if (!moved) moved = reference_backward(0x1p-24);
    const double delta = measure(flat{(*moved).*grad}, ref, norm_floor).error;
    if (delta < tol / 2 || d.error > 4 * delta) {
      char why[120];
      std::snprintf(why, sizeof why, "; the reference moves %.3g under float32 input roundings", delta);
      return diff + why;
    }
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s ill-conditioned: error %.3g, the reference moves %.3g under float32 input "
                  "roundings; ", name, d.error, delta);
    ill += buf;
    return "";
  };
  using G = reference_grads;
  std::string diff = judge("dq", dq, &G::dq);
  if (diff.empty()) diff = judge("dk", dk, &G::dk);
  if (diff.empty()) diff = judge("dv", dv, &G::dv);
  if (diff.empty()) diff = judge("d_initial_state", dh0, &G::dh0);
  if (diff.empty() && !g.mem.empty()) diff = judge("dg", dg, &G::dg);
  if (diff.empty() && !gk.mem.empty()) diff = judge("dgk", dgk, &G::dgk);
  if (diff.empty() && !beta.mem.empty()) diff = judge("dbeta", dbeta, &G::dbeta);
  if (diff.empty() && !b.mem.empty()) diff = judge("db", db, &G::db);
  if (diff.empty() && !b.mem.empty()) diff = judge("dw", dw, &G::dw);
  if (diff.empty() && gated) diff = judge("dA_log", flat{dA}, &G::dA);
  if (diff.empty() && gated) diff = judge("ddt_bias", flat{ddt}, &G::ddt);
  if (!diff.empty() && (gated || beta_act != beta_activation::none || scale != 0))
    diff += std::string(" [") + (gated ? bounded ? "gate with lower bound " : "gate " : "") +
            (beta_act != beta_activation::none ? "beta activation " : "") + (scale != 0 ? "scale" : "") + "]";
  if (diff.empty() && !ill.empty()) std::printf("fuzz backward: %s%s\n", ill.c_str(), p.describe().c_str());
  return diff;
}

}  // namespace linea::fuzz
