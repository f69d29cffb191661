// tests/fuzz/fuzz_case.hpp — one fuzz case: a random rule, form, shape and layout, with at most one twist
// (a non-finite input, bad cu_seqlens, or outputs aliasing inputs), run on the CPU backend and judged against
// the float64 reference.
//
// The contract per case (issue #13): either the form throws linea::error and no byte of any buffer changed
// (outputs start as canaries), or its outputs match the reference within SPEC §5 — non-finite exactly where
// the reference's are (NaN or ±Inf) — and nothing outside the output views was
// written. A case the reference rejects must be rejected; a twist that issue #13 forbids (partial overlaps,
// an output with stride 0 over B or T, bad cu_seqlens) must be rejected; anything else must be accepted.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <linea/linea.hpp>
#include <linea/tensor.hpp>

#include "fuzz/fuzz_tensor.hpp"
#include "support/tolerance.hpp"

namespace linea::fuzz {

enum class form_kind { recurrent, chunkwise, step };
enum class twist {
  none,
  neg_inf_decay,      // one log decay (g or gk) is −inf: a gate of exactly 0, which models produce
  nonfinite,          // one input element is NaN, +Inf or −Inf
  bad_seqlens,        // cu_seqlens not starting at 0, decreasing, not ending at T, or with B > 1
  alias_o_is_v,       // o is exactly v (in place): allowed
  alias_ht_is_h0,     // final_state is exactly initial_state: allowed
  alias_o_over_k,     // o over k with a shared key head (G = 2, V = K): partial overlap, rejected
  alias_ht_shifted,   // final_state over initial_state shifted by one head: rejected
  alias_residual_o,   // residual in o's buffer: rejected
  alias_o_stride0,    // o with stride 0 over B or T: rejected
};
inline const char* name_of(twist t) {
  constexpr const char* names[] = {"none", "neg_inf_decay", "nonfinite", "bad_seqlens", "alias_o_is_v", "alias_ht_is_h0",
                                   "alias_o_over_k", "alias_ht_shifted", "alias_residual_o", "alias_o_stride0"};
  return names[static_cast<int>(t)];
}
inline const char* name_of(form_kind f) {
  constexpr const char* names[] = {"recurrent", "chunkwise", "step"};
  return names[static_cast<int>(f)];
}

struct case_plan {
  form_kind form = form_kind::recurrent;
  twist tw = twist::none;
  index_t B = 1, T = 1, H = 1, G = 1, K = 1, V = 1, chunk = 64;
  std::vector<std::int64_t> cu;  // packed sequences (B = 1) when not empty
  bool h0 = false, ht = false, residual = false, l2 = false;
  int threads = 1;
  std::string describe() const {
    std::string d = std::string(name_of(form)) + " twist=" + name_of(tw) + " B=" + std::to_string(B) +
                    " T=" + std::to_string(T) + " H=" + std::to_string(H) + " G=" + std::to_string(G) +
                    " K=" + std::to_string(K) + " V=" + std::to_string(V) + " threads=" + std::to_string(threads);
    if (form == form_kind::chunkwise) d += " chunk=" + std::to_string(chunk);
    if (!cu.empty()) {
      d += " cu_seqlens={";
      for (auto c : cu) d += std::to_string(c) + ",";
      d.back() = '}';
    }
    if (h0) d += " h0";
    if (ht) d += " ht";
    if (residual) d += " residual";
    if (l2) d += " qk_l2norm";
    return d;
  }
};

// The plan of a case with twist `tw`: sizes small enough that a case takes about a millisecond.
inline case_plan random_plan(rng_t& rng, twist tw) {
  auto pick = [&](index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(rng); };
  auto coin = [&](int one_in) { return pick(1, one_in) == 1; };
  case_plan p;
  p.tw = tw;
  p.form = static_cast<form_kind>(pick(0, tw == twist::bad_seqlens ? 1 : 2));  // the step takes no cu_seqlens
  p.B = pick(1, 3), p.T = coin(20) ? 0 : pick(1, 80), p.H = pick(1, 2), p.G = pick(1, 2), p.K = pick(1, 40), p.V = pick(1, 40);
  p.chunk = index_t(16) << pick(0, 2);
  p.h0 = coin(2), p.ht = coin(2) || tw == twist::alias_ht_is_h0, p.residual = coin(3), p.l2 = coin(4);
  p.threads = static_cast<int>(pick(1, 3));
  if (p.form == form_kind::step) p.T = 1;
  const bool packed = p.form != form_kind::step && (tw == twist::bad_seqlens || coin(4));
  if (packed) {
    p.B = 1;
    p.cu = {0};
    const index_t n = pick(tw == twist::bad_seqlens ? 2 : 1, 4);
    for (index_t i = 1; i < n; ++i) p.cu.push_back(pick(0, p.T));
    p.cu.push_back(p.T);
    std::sort(p.cu.begin(), p.cu.end());
  }
  switch (tw) {
    case twist::bad_seqlens: {
      const index_t n = static_cast<index_t>(p.cu.size());
      switch (pick(0, 3)) {
        case 0: p.cu.front() = 1; break;                                     // not starting at 0
        case 1: p.cu.back() = p.T + pick(1, 3); break;                        // past T
        case 2: p.cu[static_cast<std::size_t>(pick(1, n - 2))] = p.T + 1, p.cu.back() = p.T; break;  // decreasing
        default: p.B = 2; break;                                             // packed with B > 1
      }
      break;
    }
    case twist::alias_ht_is_h0: p.h0 = p.ht = true; break;
    case twist::alias_o_over_k: p.G = 2, p.V = p.K; break;
    case twist::alias_ht_shifted: p.h0 = p.ht = true, p.H = std::max<index_t>(p.H, 2); break;
    case twist::alias_residual_o: p.residual = true; break;
    case twist::alias_o_stride0:  // over B (the step, or half the time) or over T
      p.cu.clear();
      if (p.form == form_kind::step || coin(2)) p.B = std::max<index_t>(p.B, 2);
      else p.T = std::max<index_t>(p.T, 2);
      break;
    default: break;
  }
  return p;
}

// Whether issue #13 requires the CPU forms to reject this twist.
inline bool must_reject(twist tw) {
  return tw == twist::bad_seqlens || tw == twist::alias_o_over_k || tw == twist::alias_ht_shifted ||
         tw == twist::alias_residual_o || tw == twist::alias_o_stride0;
}
// The same for a call with T tokens: an output with no elements (o and residual at T = 0) overlaps nothing and
// is written nowhere, so aliasing through it may be accepted (issue #13 refuses overlaps of written bytes).
inline bool must_reject(twist tw, index_t T) {
  const bool through_o = tw == twist::alias_o_over_k || tw == twist::alias_residual_o || tw == twist::alias_o_stride0;
  return must_reject(tw) && !(through_o && T == 0);
}

// The distance of an output from its reference: the first element finite on one side only (or −1), and the finite
// entries' relative L2 error ‖x − ref‖ / max(‖ref‖, floor) (‖x − ref‖ itself when both are 0). `out` is anything
// with size() and at(i) (a fuzz_tensor), `ref` anything with data() in the same order (a tensor).
struct distance {
  index_t mismatch = -1;
  double x = 0, r = 0;  // the mismatching pair
  double error = 0, ref_norm = 0;
};
template <class Out, class Ref>
distance measure(const Out& out, const Ref& ref, double floor = 0) {
  distance d;
  double num = 0, den = 0;
  for (index_t i = 0; i < out.size(); ++i) {
    const double x = out.at(i), r = ref.data()[i];
    if (std::isfinite(r) != std::isfinite(x)) return {i, x, r};
    if (std::isfinite(r)) num += (x - r) * (x - r), den += r * r;
  }
  d.ref_norm = std::sqrt(den);
  const double scale = std::max(d.ref_norm, floor);
  d.error = scale > 0 ? std::sqrt(num) / scale : std::sqrt(num);
  return d;
}

// o (and the other outputs) against the reference, elementwise: finite exactly where the reference is finite
// (NaN and ±Inf count alike: with an infinite input, Inf − Inf in one summation order is ±Inf in another), and
// the finite entries within `tol` in relative L2 error (measure's, `floor` as there). "" when they agree.
// measure()'s distance d of an output named `name` judged against `tol`: "" when it agrees, else why not.
inline std::string verdict(const char* name, const distance& d, double tol) {
  if (d.mismatch >= 0)
    return std::string(name) + "[" + std::to_string(d.mismatch) + "] = " + std::to_string(d.x) + ", reference " +
           std::to_string(d.r);
  if (d.error <= tol) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, ": relative error %.3g > %.3g (reference norm %.3g)", d.error, tol, d.ref_norm);
  return name + std::string(buf);
}
template <class Out, class Ref>
std::string compare(const char* name, const Out& out, const Ref& ref, double tol, double floor = 0) {
  return verdict(name, measure(out, ref, floor), tol);
}

// Anything with data() and size() (a std::vector, a tensor) as measure() reads an output.
template <class C>
struct flat {
  const C& c;
  index_t size() const { return index_t(c.size()); }
  double at(index_t i) const { return double(c.data()[i]); }
};
template <class C>
flat(const C&) -> flat<C>;

}  // namespace linea::fuzz
