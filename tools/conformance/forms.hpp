// tools/conformance/forms.hpp — the forms the runner puts every case through.
//
// A form is a type with
//   name()                           how it is printed ("recurrent", "step", "chunkwise/C=64", ...);
//   not_applicable(case)             why the form's contract does not cover the case, or "" (it does). This is
//                                    not for features a form lacks: a case needing one must run and fail;
//   run<Rule, Read>(inputs, outputs) computes the case's outputs from its inputs.
// all_forms() lists them; adding a form is one entry there.
#pragma once
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <linea/linea.hpp>

#include "case_arguments.hpp"

namespace linea::conformance {

// The recurrent form on the CPU backend: the whole case in one call.
struct recurrent_form {
  std::string name() const { return "recurrent"; }
  std::string not_applicable(const conformance_case&) const { return {}; }

  template <class Rule, class Read, class T, class S>
  void run(const case_inputs<T, S>& in, case_outputs<T, S>& out) const {
    arguments<T, S> a = in.args;
    out.attach(a);
    linea::recurrent<Rule, Read>(a);
  }
};

// The decode step, as a serving engine drives it: every sequence of the case is one row of the batch, the
// states form a pool [N, HV, K, V] updated in place, and each call feeds every row its next token. Rows
// whose sequence has ended get state index −1 (skipped); the step must write zeros to their output (and
// residual).
struct step_form {
  std::string name() const { return "step"; }
  std::string not_applicable(const conformance_case& c) const {
    if (c.flag("normalize")) return "the decode step carries only the state S, not the normaliser sum z of 'normalize'";
    return {};
  }

  template <class Rule, class Read, class T, class S>
  void run(const case_inputs<T, S>& in, case_outputs<T, S>& out) const {
    const arguments<T, S>& full = in.args;
    const index_t N = in.N, H = in.H, HV = in.HV, K = in.K, V = in.V;
    std::vector<sequence> seq(static_cast<std::size_t>(N));
    for (index_t n = 0; n < N; ++n)
      seq[n] = full.cu_seqlens.empty() ? sequence{n, 0, in.T_} : sequence{0, full.cu_seqlens[n], full.cu_seqlens[n + 1]};

    // The state pool: initial states (or zero), read and written in place by every call.
    tensor<S, 4> pool({N, HV, K, V});
    if (!full.initial_state.empty())
      for (index_t n = 0; n < N; ++n)
        for (index_t hv = 0; hv < HV; ++hv)
          for (index_t i = 0; i < K; ++i)
            for (index_t j = 0; j < V; ++j) pool(n, hv, i, j) = full.initial_state(n, hv, i, j);

    // One token per row: [N, 1, heads, width] buffers the rows' current tokens are gathered into.
    tensor<T, 4> q({N, 1, H, K}), k({N, 1, H, K}), v({N, 1, HV, V}), gk({N, 1, HV, K}), b({N, 1, HV, K}),
        w({N, 1, HV, V}), o({N, 1, HV, V}), u({N, 1, HV, V});
    tensor<T, 3> g({N, 1, HV}), beta({N, 1, HV});
    std::vector<std::int32_t> index(static_cast<std::size_t>(N));

    arguments<T, S> a;
    a.q = q, a.k = k, a.v = v, a.o = o;
    if (!full.g.empty()) a.g = g;
    if (!full.gk.empty()) a.gk = gk;
    if (!full.beta.empty()) a.beta = beta;
    if (!full.b.empty()) a.b = b, a.w = w;
    if (out.u.size()) a.residual = u;
    a.initial_state = pool;
    a.final_state = pool;
    a.state_indices = index;
    a.scale = full.scale, a.qk_l2norm = full.qk_l2norm, a.beta_act = full.beta_act, a.gate = full.gate;
    ccq_step_pools<T, S> ccq;  // CCQ: statistics pools carried like the state pool
    ccq.attach(full, a, N, HV, K);

    index_t steps = 0;
    for (const auto& s : seq) steps = std::max(steps, s.length());
    for (index_t s = 0; s < steps; ++s) {
      for (index_t n = 0; n < N; ++n) {
        const bool live = s < seq[n].length();
        index[n] = live ? static_cast<std::int32_t>(n) : -1;
        if (live) gather(full, seq[n].batch, seq[n].t_begin + s, n, q, k, v, g, gk, beta, b, w);
        if (live) ccq.gather(full, seq[n].batch, seq[n].t_begin + s, n);
      }
      for (auto& x : o.values()) x = T(std::nan(""));
      for (auto& x : u.values()) x = T(std::nan(""));
      linea::step<Rule, Read>(a);
      for (index_t n = 0; n < N; ++n)
        for (index_t hv = 0; hv < HV; ++hv)
          for (index_t j = 0; j < V; ++j) {
            if (index[n] < 0) {
              if (o(n, 0, hv, j) != T(0) || (out.u.size() && u(n, 0, hv, j) != T(0)))
                throw case_error("the step did not write zeros to a skipped row (state index -1)");
              continue;
            }
            const index_t t = seq[n].t_begin + s;
            out.o(seq[n].batch, t, hv, j) = o(n, 0, hv, j);
            if (out.u.size()) out.u(seq[n].batch, t, hv, j) = u(n, 0, hv, j);
          }
      for (index_t n = 0; n < N; ++n)
        if (index[n] >= 0) ccq.scatter(out.ccq, seq[n].batch, seq[n].t_begin + s, n);
    }
    out.ht.values() = pool.values();
    ccq.finish(out.ccq);
  }

 private:
  // Copies token t of batch row bt (every head) into row n of the step buffers.
  template <class T, class S>
  static void gather(const arguments<T, S>& a, index_t bt, index_t t, index_t n, tensor<T, 4>& q, tensor<T, 4>& k,
                     tensor<T, 4>& v, tensor<T, 3>& g, tensor<T, 4>& gk, tensor<T, 3>& beta, tensor<T, 4>& b,
                     tensor<T, 4>& w) {
    for (index_t h = 0; h < q.extent(2); ++h)
      for (index_t i = 0; i < q.extent(3); ++i) q(n, 0, h, i) = a.q(bt, t, h, i), k(n, 0, h, i) = a.k(bt, t, h, i);
    for (index_t hv = 0; hv < v.extent(2); ++hv) {
      for (index_t j = 0; j < v.extent(3); ++j) {
        v(n, 0, hv, j) = a.v(bt, t, hv, j);
        if (!a.w.empty()) w(n, 0, hv, j) = a.w(bt, t, hv, j);
      }
      for (index_t i = 0; i < gk.extent(3); ++i) {
        if (!a.gk.empty()) gk(n, 0, hv, i) = a.gk(bt, t, hv, i);
        if (!a.b.empty()) b(n, 0, hv, i) = a.b(bt, t, hv, i);
      }
      if (!a.g.empty()) g(n, 0, hv) = a.g(bt, t, hv);
      if (!a.beta.empty()) beta(n, 0, hv) = a.beta(bt, t, hv);
    }
  }
};

// The chunkwise form (forms/chunkwise.hpp) at chunk size C: the whole case in one call.
template <index_t C>
struct chunkwise_form {
  std::string name() const { return "chunkwise/C=" + std::to_string(C); }
  std::string not_applicable(const conformance_case&) const { return {}; }

  template <class Rule, class Read, class T, class S>
  void run(const case_inputs<T, S>& in, case_outputs<T, S>& out) const {
    arguments<T, S> a = in.args;
    out.attach(a);
    a.chunk_size = C;
    linea::chunkwise<Rule, Read>(a);
  }
};

// Every form the library has, in the order the runner prints them.
#if defined(LINEA_CONFORMANCE_CUDA)
// linea_cuda_conformance (tools/linea_cuda_conformance.cu): the CUDA backend's forms, from cuda_forms.hpp.
inline auto all_forms() { return cuda_forms(); }
#else
inline auto all_forms() {
  return std::tuple{recurrent_form{}, step_form{}, chunkwise_form<16>{}, chunkwise_form<32>{}, chunkwise_form<64>{},
                    chunkwise_form<128>{}};
}
#endif

}  // namespace linea::conformance
