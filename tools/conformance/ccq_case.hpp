// tools/conformance/ccq_case.hpp — the CCQ part of a case (params.read = "ccq"; format in
// ../shared/conformance/README.md): its inputs, its outputs and truths, and the pools the decode step carries.
//
//   inputs   lam [B,T,HV] → ccq.lambda;  ccq_g [B,T,HV] → ccq.log_decay (only when params.ccq_weighting is
//            "decayed": the uniform weighting takes no log decay);  ccq_C0/m0/z0 → ccq.C0/m0/z0
//   outputs  q̃ ↔ qt_ref64,  C ↔ ccq_C_ref64,  m ↔ ccq_m_ref64,  z ↔ ccq_z_ref64
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include <linea/linea.hpp>

#include "manifest.hpp"
#include "support/compare.hpp"

namespace linea::conformance {

inline bool is_ccq(const conformance_case& c) { return c.read_policy() == "ccq"; }

// "uniform" (the default) or "decayed".
inline std::string ccq_weighting(const conformance_case& c) {
  return c.given("ccq_weighting") ? c.params()["ccq_weighting"].get<std::string>() : "uniform";
}

template <class T, class S>
class ccq_case_inputs {
 public:
  // Fills a.ccq's inputs from the case (nothing for a case with another read).
  void load(const conformance_case& c, arguments<T, S>& a) {
    if (!is_ccq(c)) return;
    a.ccq.lambda = load3<T>(c, "lam", lambda_);
    if (ccq_weighting(c) == "decayed" && c.has("ccq_g")) a.ccq.log_decay = load3<T>(c, "ccq_g", log_decay_);
    if (c.has("ccq_C0")) {
      const stored_tensor& C0 = c.file("ccq_C0");
      C0_ = C0.template read<S>();
      a.ccq.C0 = contiguous<4>(static_cast<const S*>(C0_.data()), {C0.shape[0], C0.shape[1], C0.shape[2], C0.shape[3]});
      const stored_tensor& m0 = c.file("ccq_m0");
      m0_ = m0.template read<S>();
      a.ccq.m0 = contiguous<3>(static_cast<const S*>(m0_.data()), {m0.shape[0], m0.shape[1], m0.shape[2]});
      const stored_tensor& z0 = c.file("ccq_z0");
      z0_ = z0.template read<S>();
      a.ccq.z0 = contiguous<2>(static_cast<const S*>(z0_.data()), {z0.shape[0], z0.shape[1]});
    }
  }

 private:
  template <class E>
  static view<const E, 3> load3(const conformance_case& c, const std::string& name, std::vector<E>& buffer) {
    const stored_tensor& st = c.file(name);
    if (st.rank() != 3)
      throw case_error("tensor '" + name + "' has rank " + std::to_string(st.rank()) + "; expected 3 [B, T, HV]");
    buffer = st.template read<E>();
    return contiguous<3>(static_cast<const E*>(buffer.data()), {st.shape[0], st.shape[1], st.shape[2]});
  }

  std::vector<T> lambda_, log_decay_;
  std::vector<S> C0_, m0_, z0_;
};

// The CCQ outputs a form writes (NaN-filled, so anything left unwritten fails), and their comparison.
template <class T, class S>
class ccq_case_outputs {
 public:
  void shape(const conformance_case& c, index_t B, index_t T_, index_t N, index_t HV, index_t K) {
    if (!is_ccq(c)) return;
    const double nan = std::nan("");
    q_tilde = tensor<T, 4>({B, T_, HV, K}, T(nan));
    C = tensor<S, 4>({N, HV, K, K}, S(nan));
    m = tensor<S, 3>({N, HV, K}, S(nan));
    z = tensor<S, 2>({N, HV}, S(nan));
  }

  void attach(arguments<T, S>& a) {
    if (!q_tilde.size()) return;
    a.ccq.q_tilde = q_tilde, a.ccq.C = C, a.ccq.m = m, a.ccq.z = z;
  }

  // (name, relative error) of every CCQ output whose truth the case holds.
  template <class Check>
  void compare(const conformance_case& c, std::vector<Check>& out) const {
    if (!q_tilde.size()) return;
    one(c, "qt", q_tilde.data(), q_tilde.size(), "qt_ref64", out);
    one(c, "C", C.data(), C.size(), "ccq_C_ref64", out);
    one(c, "m", m.data(), m.size(), "ccq_m_ref64", out);
    one(c, "z", z.data(), z.size(), "ccq_z_ref64", out);
  }

  tensor<T, 4> q_tilde;
  tensor<S, 4> C;
  tensor<S, 3> m;
  tensor<S, 2> z;

 private:
  template <class X, class Check>
  static void one(const conformance_case& c, const char* name, const X* x, std::size_t n, const std::string& truth,
                  std::vector<Check>& out) {
    if (!c.has(truth)) return;
    const std::vector<double> ref = c.file(truth).template read<double>();
    if (ref.size() != n)
      throw case_error("truth '" + truth + "' has " + std::to_string(ref.size()) + " values; the output " + name +
                       " has " + std::to_string(n));
    out.push_back({name, testing::relative_error(x, ref.data(), n)});
  }
};

// The decode step's view of CCQ: statistics pools [N, ...] updated in place like the state pool, and the
// per-token λ, log decay and q̃ of each batch row gathered into / scattered from [N, 1, HV(, K)] buffers.
template <class T, class S>
class ccq_step_pools {
 public:
  // Sets up the pools (from the case's initial statistics, or zero) and points a.ccq at them.
  void attach(const arguments<T, S>& full, arguments<T, S>& a, index_t N, index_t HV, index_t K) {
    if (full.ccq.lambda.empty()) return;
    active_ = true;
    C = tensor<S, 4>({N, HV, K, K}), m = tensor<S, 3>({N, HV, K}), z = tensor<S, 2>({N, HV});
    if (!full.ccq.C0.empty())
      for (index_t n = 0; n < N; ++n)
        for (index_t hv = 0; hv < HV; ++hv) {
          z(n, hv) = full.ccq.z0(n, hv);
          for (index_t i = 0; i < K; ++i) {
            m(n, hv, i) = full.ccq.m0(n, hv, i);
            for (index_t j = 0; j < K; ++j) C(n, hv, i, j) = full.ccq.C0(n, hv, i, j);
          }
        }
    lambda = tensor<T, 3>({N, 1, HV});
    q_tilde = tensor<T, 4>({N, 1, HV, K});
    a.ccq.lambda = lambda;
    if (!full.ccq.log_decay.empty()) log_decay = tensor<T, 3>({N, 1, HV}), a.ccq.log_decay = log_decay;
    a.ccq.C0 = C, a.ccq.m0 = m, a.ccq.z0 = z;  // in place, like the state pool
    a.ccq.C = C, a.ccq.m = m, a.ccq.z = z;
    a.ccq.q_tilde = q_tilde;
  }

  // Token t of batch row bt into row n.
  void gather(const arguments<T, S>& full, index_t bt, index_t t, index_t n) {
    if (!active_) return;
    for (index_t hv = 0; hv < lambda.extent(2); ++hv) {
      lambda(n, 0, hv) = full.ccq.lambda(bt, t, hv);
      if (log_decay.size()) log_decay(n, 0, hv) = full.ccq.log_decay(bt, t, hv);
    }
  }

  // Row n's q̃ back to token t of batch row bt of the outputs.
  void scatter(ccq_case_outputs<T, S>& out, index_t bt, index_t t, index_t n) const {
    if (!active_ || !out.q_tilde.size()) return;
    for (index_t hv = 0; hv < q_tilde.extent(2); ++hv)
      for (index_t i = 0; i < q_tilde.extent(3); ++i) out.q_tilde(bt, t, hv, i) = q_tilde(n, 0, hv, i);
  }

  // The final statistics are the pools.
  void finish(ccq_case_outputs<T, S>& out) const {
    if (!active_ || !out.q_tilde.size()) return;
    out.C.values() = C.values(), out.m.values() = m.values(), out.z.values() = z.values();
  }

 private:
  bool active_ = false;
  tensor<S, 4> C;
  tensor<S, 3> m;
  tensor<S, 2> z;
  tensor<T, 3> lambda, log_decay;
  tensor<T, 4> q_tilde;
};

}  // namespace linea::conformance
