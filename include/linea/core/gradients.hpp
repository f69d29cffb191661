// linea/core/gradients.hpp — the gradient views of a backward call, filled with designated initialisers.
//
//   linea::gradients<float> g{.d_o = d_o, .d_final_state = dht, .dq = dq, .dk = dk, .dv = dv, .dgk = dgk,
//                             .dbeta = dbeta, .d_initial_state = dh0};
//   linea::reference::backward<linea::kda>(a, g);   // a: the forward's arguments
//
// The loss is L = ⟨o, d_o⟩ + ⟨S_T, d_final_state⟩ (SPEC §6). Inputs: d_o (required) and d_final_state
// (optional: zero). Every output view that is given receives dL/d(that input of the forward) — of the raw
// stored input under the in-kernel options (q, k before the L2 norm; gate logits; β logits). An output left
// empty is not computed. Outputs are overwritten (set, not added to); a per-token sum's view with stride 0 (dg
// of g_gamma) receives the sum over the positions it covers. validate_gradients() checks all of it before
// anything is written: a gradient may share memory with an input only exactly in place over its own input (dq
// over q), never with d_o or d_final_state; two gradient views must not overlap (checked on their byte ranges).
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "argument_views.hpp"
#include "arguments.hpp"
#include "error.hpp"
#include "validate.hpp"

namespace linea {

template <class T, class S = accumulate_t<T>>
struct gradients {
  // ---- inputs ----------------------------------------------------------------------------------
  view<const T, 4> d_o = {};            // dL/do     [B, T, HV, V] (required)
  view<const S, 4> d_final_state = {};  // dL/dS_T   [N, HV, K, V] (optional; zero when empty)

  // ---- outputs (each written when given) -------------------------------------------------------
  view<T, 4> dq = {};               // [B, T, H, K]  (summed over the G value heads of a key head)
  view<T, 4> dk = {};               // [B, T, H, K]
  view<T, 4> dv = {};               // [B, T, HV, V]
  view<T, 3> dg = {};               // scalar-gate rules: [B, T, HV]
  view<T, 4> dgk = {};              // per-key-gate rules: [B, T, HV, K]
  view<T, 3> dbeta = {};            // delta rules: [B, T, HV]
  view<T, 4> db = {};               // GDN-2 erase gate [B, T, HV, K]
  view<T, 4> dw = {};               // GDN-2 write gate [B, T, HV, V]
  view<S, 4> d_initial_state = {};  // dL/dS_0 [N, HV, K, V] (also when S_0 was not given: the gradient at zero)
  view<S, 1> dA_log = {};           // in-kernel gates: [HV]
  view<S, 1> ddt_bias = {};         // in-kernel gates: [HV] (scalar gate) or [HV·K] (per-key gate)

  // ---- CCQ read (SPEC §3) ----------------------------------------------------------------------
  view<T, 3> dlambda = {};          // [B, T, HV]
  view<T, 3> dccq_log_decay = {};   // [B, T, HV], when the forward was given ccq.log_decay (decayed weighting)
  view<S, 4> dC0 = {};              // [N, HV, K, K] initial statistics (also when not given: the gradient at zero)
  view<S, 3> dm0 = {};              // [N, HV, K]
  view<S, 2> dz0 = {};              // [N, HV]
};

namespace detail {

template <class T, class S>
void expect_gradient_data(const gradients<T, S>& g) {
  for_each_upstream(g, [](const auto& x, const char* name) { expect_data(x, name); });
  for_each_gradient(g, [](const auto& x, const char* name, const char*) { expect_data(x, name); });
}

// No two gradient outputs may share memory (core/aliasing.hpp): each is set, not added to. Stride 0 is allowed
// here (a gradient over a broadcast input receives the sum over the positions it covers).
template <class T, class S>
void expect_disjoint_gradients(const gradients<T, S>& g) {
  for_each_pair([&](auto f) { for_each_gradient(g, f); },
                [](const auto& x, const char* x_name, const auto& y, const char* y_name) {
                  expect_disjoint(x, x_name, y, y_name, false, "two gradient outputs must not share memory");
                });
}

// A gradient output may share memory with an input of the backward only exactly in place over the input it is
// the gradient of (dq == q, dgk == gk, d_initial_state == initial_state, ...: the same pointer, element size,
// extents and strides). The CPU backward writes dv, dgk, db, dw token by token while earlier tokens' inputs are
// still to be read, and reads the raw q, k again after every value head has written its gradients (the L2 norm's
// adjoint), so dv over v shifted by a token, or dv over q, would read a gradient as an input. d_o and
// d_final_state are never overwritten.
inline constexpr const char* gradient_aliasing_rule =
    "a gradient output may share memory with no input of the backward (the forward's inputs, d_o, d_final_state) "
    "except exactly in place over its own input (dq == q, dv == v, ...: the same pointer, extents and strides)";

template <class T, class S>
void expect_gradients_apart_from_inputs(const arguments<T, S>& a, const gradients<T, S>& g) {
  for_each_gradient(g, [&](const auto& out, const char* name, std::string_view own) {
    const auto against = [&](const auto& x, const char* x_name) {
      expect_disjoint(out, name, x, x_name, own == x_name, gradient_aliasing_rule);
    };
    for_each_input(a, against);
    for_each_index_span(a, against);
    for_each_upstream(g, against);
  });
}

// Gradients stored position by position need one element per position: a stride 0 over an extent > 1 would keep
// one position's value (or race between threads), not the sum. The per-token and per-sequence sums (dg, dbeta,
// dlambda, dccq_log_decay, dC0, dm0, dz0) are stored once from float64 sums, so those may have stride 0 (g_gamma's
// dg): the element receives the sum over the positions it covers.
template <class T, class S>
void expect_one_element_per_position(const gradients<T, S>& g) {
  expect_distinct_elements(g.dq, "dq"), expect_distinct_elements(g.dk, "dk"), expect_distinct_elements(g.dv, "dv");
  expect_distinct_elements(g.dgk, "dgk"), expect_distinct_elements(g.db, "db"), expect_distinct_elements(g.dw, "dw");
  expect_distinct_elements(g.d_initial_state, "d_initial_state"), expect_distinct_elements(g.dA_log, "dA_log");
  expect_distinct_elements(g.ddt_bias, "ddt_bias");
}

// A gradient is only offered for an input the forward reads: "gradient 'dg' is given, but <why>".
template <class V>
void expect_no_gradient(const V& v, const char* name, const std::string& why) {
  if (!v.empty())
    throw error(std::string("gradient '") + name + "' (shape " + shape_string(v) + ") is given, but " + why);
}

// A caller's scratch buffer [scratch, scratch + bytes) (the CUDA backend's cuda::launch::workspace): the call writes
// it while it still reads its inputs and before it writes its outputs, so it may share memory with no argument of
// the call — the forward's inputs and outputs, and with g the backward's d_o, d_final_state and gradients
// (core/aliasing.hpp's byte ranges). `name` names the buffer in the error. Null or empty: nothing to check.
template <class T, class S>
void expect_scratch_apart(const void* scratch, std::size_t bytes, const char* name, const arguments<T, S>& a,
                          const gradients<T, S>* g = nullptr) {
  if (scratch == nullptr || bytes == 0) return;
  const auto lo = reinterpret_cast<std::uintptr_t>(scratch);
  const byte_range s{lo, lo + bytes};
  auto apart = [&](const auto& x, const char* x_name) {
    if (!s.overlaps(bytes_of(x))) return;
    std::ostringstream m;
    m << "argument " << name << " (bytes [0x" << std::hex << s.lo << ", 0x" << s.hi << ")) overlaps argument "
      << describe_memory(x, x_name) << "; the call's scratch is overwritten while it runs and may share memory with "
      << "no argument";
    throw error(m.str());
  };
  for_each_input(a, apart);
  for_each_index_span(a, apart);
  for_each_output(a, [&](const auto& x, const char* x_name, const char*) { apart(x, x_name); });
  if (g == nullptr) return;
  for_each_upstream(*g, apart);
  for_each_gradient(*g, [&](const auto& x, const char* x_name, const char*) { apart(x, x_name); });
}

}  // namespace detail

// Checks the gradient views against the forward's problem `p` (from validate<Rule, Read>(a)). Which gate
// gradients are allowed follows from which gates the forward was given (validate() already holds the forward
// to its rule), so this check needs no rule: dg ⇔ g, dgk ⇔ gk, dbeta ⇔ beta, db/dw ⇔ b/w.
template <bool ccq_read, class T, class S>
void validate_gradients(const arguments<T, S>& a, const gradients<T, S>& g, const problem& p) {
  using namespace detail;
  expect_gradient_data(g);
  expect_given(g.d_o, "d_o", "the backward needs dL/do [B, T, HV, V]");
  expect_shape(g.d_o, "d_o", "[B, T, HV, V] as v", {p.B, p.T, p.HV, p.V});
  if (!g.d_final_state.empty())
    expect_shape(g.d_final_state, "d_final_state", "[N, HV, K, V]", {p.N, p.HV, p.K, p.V});

  if (!g.dq.empty()) expect_shape(g.dq, "dq", "[B, T, H, K] as q", {p.B, p.T, p.H, p.K});
  if (!g.dk.empty()) expect_shape(g.dk, "dk", "[B, T, H, K] as k", {p.B, p.T, p.H, p.K});
  if (!g.dv.empty()) expect_shape(g.dv, "dv", "[B, T, HV, V] as v", {p.B, p.T, p.HV, p.V});
  if (a.g.empty()) expect_no_gradient(g.dg, "dg", "the forward has no scalar gate g");
  else if (!g.dg.empty()) expect_shape(g.dg, "dg", "[B, T, HV] as g", {p.B, p.T, p.HV});
  if (a.gk.empty()) expect_no_gradient(g.dgk, "dgk", "the forward has no per-key gate gk");
  else if (!g.dgk.empty()) expect_shape(g.dgk, "dgk", "[B, T, HV, K] as gk", {p.B, p.T, p.HV, p.K});
  if (a.beta.empty()) expect_no_gradient(g.dbeta, "dbeta", "the forward has no beta");
  else if (!g.dbeta.empty()) expect_shape(g.dbeta, "dbeta", "[B, T, HV] as beta", {p.B, p.T, p.HV});
  if (a.b.empty()) expect_no_gradient(g.db, "db", "the forward has no erase gate b");
  else if (!g.db.empty()) expect_shape(g.db, "db", "[B, T, HV, K] as b", {p.B, p.T, p.HV, p.K});
  if (a.w.empty()) expect_no_gradient(g.dw, "dw", "the forward has no write gate w");
  else if (!g.dw.empty()) expect_shape(g.dw, "dw", "[B, T, HV, V] as w", {p.B, p.T, p.HV, p.V});
  if (!g.d_initial_state.empty())
    expect_shape(g.d_initial_state, "d_initial_state", "[N, HV, K, V]", {p.N, p.HV, p.K, p.V});

  if (!a.gate.active()) {
    expect_no_gradient(g.dA_log, "dA_log", "the forward has no in-kernel gate (gate.A_log)");
    expect_no_gradient(g.ddt_bias, "ddt_bias", "the forward has no in-kernel gate (gate.A_log)");
  } else {
    if (!g.dA_log.empty()) expect_shape(g.dA_log, "dA_log", "[HV] as gate.A_log", {p.HV});
    if (a.gate.dt_bias.empty()) expect_no_gradient(g.ddt_bias, "ddt_bias", "the forward has no gate.dt_bias");
    else if (!g.ddt_bias.empty())
      expect_shape(g.ddt_bias, "ddt_bias", "as gate.dt_bias", {a.gate.dt_bias.extent(0)});
  }

  if constexpr (!ccq_read) {
    const char* why = "it belongs to the CCQ read, and this call uses the identity read";
    expect_no_gradient(g.dlambda, "dlambda", why);
    expect_no_gradient(g.dccq_log_decay, "dccq_log_decay", why);
    expect_no_gradient(g.dC0, "dC0", why);
    expect_no_gradient(g.dm0, "dm0", why);
    expect_no_gradient(g.dz0, "dz0", why);
  } else {
    if (!g.dlambda.empty()) expect_shape(g.dlambda, "dlambda", "[B, T, HV] as ccq.lambda", {p.B, p.T, p.HV});
    if (a.ccq.log_decay.empty())
      expect_no_gradient(g.dccq_log_decay, "dccq_log_decay",
                         "the forward was not given ccq.log_decay (its default, the rule's own decay, gets the "
                         "gradient through dg / dgk)");
    else if (!g.dccq_log_decay.empty())
      expect_shape(g.dccq_log_decay, "dccq_log_decay", "[B, T, HV] as ccq.log_decay", {p.B, p.T, p.HV});
    if (!g.dC0.empty()) expect_shape(g.dC0, "dC0", "[N, HV, K, K]", {p.N, p.HV, p.K, p.K});
    if (!g.dm0.empty()) expect_shape(g.dm0, "dm0", "[N, HV, K]", {p.N, p.HV, p.K});
    if (!g.dz0.empty()) expect_shape(g.dz0, "dz0", "[N, HV]", {p.N, p.HV});
  }
  expect_disjoint_gradients(g);
  expect_gradients_apart_from_inputs(a, g);
  expect_one_element_per_position(g);
}

}  // namespace linea
