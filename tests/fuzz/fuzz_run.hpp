// tests/fuzz/fuzz_run.hpp — runs one planned fuzz case (fuzz_case.hpp) for one rule and judges it.
#pragma once
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz/fuzz_case.hpp"
#include "fuzz/fuzz_conditioning.hpp"

namespace linea::fuzz {

template <class X, int R>
tensor<double, R> to_double(const fuzz_tensor<X, R>& t) {
  tensor<double, R> d(t.ext);
  for (index_t i = 0; i < t.size(); ++i) d.data()[i] = static_cast<double>(t.at(i));
  return d;
}

// The inputs of a case in random layouts (float32), and its outputs, canary-filled.
struct case_buffers {
  fuzz_tensor<float, 4> q, k, v, gk, b, w, h0, o, residual, ht;
  fuzz_tensor<float, 3> g, beta;

  template <class F>
  void for_each(F&& f) {
    f("q", q), f("k", k), f("v", v), f("gk", gk), f("b", b), f("w", w), f("initial_state", h0), f("o", o);
    f("residual", residual), f("final_state", ht), f("g", g), f("beta", beta);
  }
};

// Cases whose o was over SPEC §5's bound only as far as its read's cancellation explains (fuzz_conditioning.hpp):
// passed, and counted here with the last one's figures for the run's message (fuzz_test.cpp).
struct ill_conditioned_log {
  long count = 0;
  std::string last;  // "o: relative error e, read conditioning κ (estimate u·κ)"
};
inline ill_conditioned_log& ill_conditioned_cases() {
  static ill_conditioned_log log;
  return log;
}

template <class Rule>
std::string run_case(rng_t& rng, const case_plan& p) {
  const index_t B = p.B, T = p.T, H = p.H, HV = p.G * p.H, K = p.K, V = p.V;
  const index_t N = p.cu.empty() ? B : static_cast<index_t>(p.cu.size()) - 1;
  std::normal_distribution<double> normal(0.0, 1.0);
  auto pick = [&](index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(rng); };
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const float c = canary();
  const bool o_over_k = p.tw == twist::alias_o_over_k, shifted = p.tw == twist::alias_ht_shifted;

  // ---- inputs ----
  case_buffers in;
  in.q = random_layout<float, 4>(rng, {B, T, H, K}, c);
  in.k = random_layout<float, 4>(rng, {B, T, H, K}, c, !o_over_k);
  in.v = random_layout<float, 4>(rng, {B, T, HV, V}, c);
  for (index_t i = 0; i < in.q.size(); ++i) in.q.at(i) = float(normal(rng));
  for (index_t r = 0; r < in.k.size() / std::max<index_t>(K, 1); ++r) {  // unit key rows
    std::vector<double> row(static_cast<std::size_t>(K));
    double ss = 0;
    for (auto& x : row) x = normal(rng), ss += x * x;
    for (index_t i = 0; i < K; ++i) in.k.at(r * K + i) = float(row[static_cast<std::size_t>(i)] / std::sqrt(ss));
  }
  for (index_t i = 0; i < in.v.size(); ++i) in.v.at(i) = float(normal(rng));
  constexpr auto inputs = Rule::inputs;
  if constexpr (reads(inputs, input::g)) {
    in.g = random_layout<float, 3>(rng, {B, T, HV}, c);
    for (index_t i = 0; i < in.g.size(); ++i) in.g.at(i) = float(std::log(sig(normal(rng))));
  }
  if constexpr (reads(inputs, input::gk)) {
    in.gk = random_layout<float, 4>(rng, {B, T, HV, K}, c);
    for (index_t i = 0; i < in.gk.size(); ++i) in.gk.at(i) = float(std::log(sig(normal(rng))));
  }
  if constexpr (reads(inputs, input::beta)) {
    in.beta = random_layout<float, 3>(rng, {B, T, HV}, c);
    for (index_t i = 0; i < in.beta.size(); ++i) in.beta.at(i) = float(sig(normal(rng)));
  }
  if constexpr (reads(inputs, input::b | input::w)) {
    in.b = random_layout<float, 4>(rng, {B, T, HV, K}, c);
    in.w = random_layout<float, 4>(rng, {B, T, HV, V}, c);
    for (index_t i = 0; i < in.b.size(); ++i) in.b.at(i) = float(sig(normal(rng)));
    for (index_t i = 0; i < in.w.size(); ++i) in.w.at(i) = float(sig(normal(rng)));
  }
  if (p.h0) {
    in.h0 = random_layout<float, 4>(rng, {N, HV, K, V}, c, !shifted);
    for (index_t i = 0; i < in.h0.size(); ++i) in.h0.at(i) = float(normal(rng));
  }
  std::string injected;  // "k[12] = nan": the non-finite input of this case
  if (p.tw == twist::nonfinite || p.tw == twist::neg_inf_decay) {  // one element of one input the rule reads
    const float values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
    std::vector<std::function<void()>> targets;
    auto add = [&](const char* name, auto& t, bool decay) {
      if (t.mem.empty() || t.size() == 0 || (p.tw == twist::neg_inf_decay && !decay)) return;
      targets.push_back([&, name, decay] {
        const float x = p.tw == twist::neg_inf_decay ? values[2] : values[pick(0, 2)];
        const index_t at = pick(0, t.size() - 1);
        t.at(at) = x;
        injected = std::string(name) + "[" + std::to_string(at) + "] = " + std::to_string(x);
      });
    };
    add("q", in.q, false), add("k", in.k, false), add("v", in.v, false), add("b", in.b, false), add("w", in.w, false);
    add("initial_state", in.h0, false), add("gk", in.gk, true), add("g", in.g, true), add("beta", in.beta, false);
    if (!targets.empty()) targets[static_cast<std::size_t>(pick(0, index_t(targets.size()) - 1))]();
  }

  // ---- the reference, on float64 copies of the same values ----
  tensor<double, 4> rq = to_double(in.q), rk = to_double(in.k), rv = to_double(in.v), rgk = to_double(in.gk);
  tensor<double, 4> rb = to_double(in.b), rw = to_double(in.w), rh0 = to_double(in.h0);
  tensor<double, 3> rg = to_double(in.g), rbeta = to_double(in.beta);
  tensor<double, 4> ro({B, T, HV, V}), rres({B, T, HV, V}), rht({N, HV, K, V});
  arguments<double> ra;
  ra.q = rq, ra.k = rk, ra.v = rv, ra.o = ro, ra.residual = rres, ra.final_state = rht;
  if (!in.g.mem.empty()) ra.g = rg;
  if (!in.gk.mem.empty()) ra.gk = rgk;
  if (!in.beta.mem.empty()) ra.beta = rbeta;
  if (!in.b.mem.empty()) ra.b = rb, ra.w = rw;
  if (p.h0) ra.initial_state = rh0;
  ra.cu_seqlens = p.cu;
  ra.qk_l2norm = p.l2;
  bool reference_rejects = false;
  try {
    reference::recurrent<Rule>(ra);
  } catch (const linea::error&) {
    reference_rejects = true;
  }

  // ---- the CPU form, on the float32 buffers ----
  in.o = random_layout<float, 4>(rng, {B, T, HV, V}, c);
  if (p.residual) in.residual = random_layout<float, 4>(rng, {B, T, HV, V}, c);
  if (p.ht) in.ht = random_layout<float, 4>(rng, {N, HV, K, V}, c);
  if (o_over_k) in.k.mem.resize(static_cast<std::size_t>(B * T * HV * V), c);  // room for o over it
  if (shifted) in.h0.mem.resize(in.h0.mem.size() + static_cast<std::size_t>(K * V), c);
  arguments<float> a;
  a.q = in.q.in(), a.k = in.k.in(), a.v = in.v.in();
  if (!in.g.mem.empty()) a.g = in.g.in();
  if (!in.gk.mem.empty()) a.gk = in.gk.in();
  if (!in.beta.mem.empty()) a.beta = in.beta.in();
  if (!in.b.mem.empty()) a.b = in.b.in(), a.w = in.w.in();
  if (p.h0) a.initial_state = in.h0.in();
  a.cu_seqlens = p.cu;
  a.qk_l2norm = p.l2;
  a.chunk_size = p.chunk;
  a.threads = p.threads;
  fuzz_tensor<float, 4>* o = &in.o;   // where o's values end up
  fuzz_tensor<float, 4>* ht = &in.ht;
  a.o = in.o.out();
  if (p.residual) a.residual = in.residual.out();
  if (p.ht) a.final_state = in.ht.out();
  switch (p.tw) {
    case twist::alias_o_is_v: a.o = in.v.out(), o = &in.v; break;
    case twist::alias_ht_is_h0: a.final_state = in.h0.out(), ht = &in.h0; break;
    case twist::alias_o_over_k: a.o = contiguous<4>(in.k.mem.data(), {B, T, HV, V}); break;
    case twist::alias_ht_shifted: a.final_state = contiguous<4>(in.h0.mem.data() + K * V, {N, HV, K, V}); break;
    case twist::alias_residual_o: a.residual = a.o; break;
    case twist::alias_o_stride0: a.o.str[B > 1 ? 0 : 1] = 0; break;
    default: break;
  }

  std::vector<std::vector<unsigned char>> before;
  in.for_each([&](const char*, const auto& t) { before.push_back(bytes_of(t)); });
  std::string rejection;
  try {
    switch (p.form) {
      case form_kind::recurrent: recurrent<Rule>(a); break;
      case form_kind::chunkwise: chunkwise<Rule>(a); break;
      case form_kind::step: step<Rule>(a); break;
    }
  } catch (const linea::error& e) {
    rejection = e.what();
    if (rejection.empty()) rejection = "(empty message)";
  } catch (const std::exception& e) {
    return std::string("threw a non-linea exception: ") + e.what();
  }

  // ---- the verdict ----
  std::string changed;  // buffers changed where they must not be
  std::size_t i = 0;
  in.for_each([&](const char* name, const auto& t) {
    const auto& was = before[i++];
    const void* self = &t;
    const bool hosts_output = rejection.empty() && (self == o || (p.ht && self == ht) || (p.residual && self == &in.residual));
    const bool same = hosts_output ? gaps_unchanged(t, was) : bytes_of(t) == was;
    if (!same) changed += std::string(changed.empty() ? "" : ", ") + name;
  });
  if (!rejection.empty()) {
    if (!changed.empty()) return "threw (" + rejection + ") after writing to " + changed;
    if (!must_reject(p.tw) && !reference_rejects) return "rejected a case the reference accepts: " + rejection;
    return "";
  }
  if (must_reject(p.tw, T)) return std::string("accepted a case issue #13 requires rejected (") + name_of(p.tw) + ")";
  if (reference_rejects) return "accepted a case the reference rejects";
  if (!changed.empty()) return "wrote outside its output views or into an input: " + changed;
  const double tol = linea::testing::tolerance_for<float>(T);
  std::string diff = compare("o", *o, ro, tol);
  if (diff.rfind("o: relative error", 0) == 0) {  // over the bound with every element finite where the reference is
    const double kappa = read_conditioning<Rule>(ra), err = measure(*o, ro).error;
    const std::string figures = "o: relative error " + std::to_string(err) + ", read conditioning " + std::to_string(kappa) +
                                " (estimate " + std::to_string(float32_roundoff * kappa) + ")";
    if (read_explains(err, tol, kappa)) {
      ill_conditioned_cases().count += 1, ill_conditioned_cases().last = figures;
      diff.clear();
    } else {
      diff += " [" + figures + "]";
    }
  }
  if (diff.empty() && p.ht) diff = compare("final_state", *ht, rht, tol);
  if (diff.empty() && p.residual) diff = compare("residual", in.residual, rres, tol);
  return diff.empty() || injected.empty() ? diff : diff + " (input " + injected + ")";
}

}  // namespace linea::fuzz
