// linea/read/identity.hpp — the identity read: q̃_t = q_t, o_t = S_tᵀ (s · q_t).
#pragma once
#include "../core/arguments.hpp"
#include "../core/error.hpp"
#include "../core/validate.hpp"
#include "../rules/token.hpp"

namespace linea::read {

// A read policy is a type with
//   validate(args, problem)              its own argument checks (before anything is written);
//   carried<R>                            its per-(sequence, value head) state for the token-by-token forms:
//     begin(args, p, n, hv)               load initial statistics of sequence n (or zero),
//     query(args, p, bt, t, hv, x, k)     return q̃_t for token x after its key k has been written,
//     end(args, p, n, hv)                 store final statistics.
//   chunk_carried<R>                      the same state for the chunkwise form (forms/chunkwise.hpp), one chunk
//                                         of L ≤ C tokens at a time, per (sequence n, value head hv):
//     begin(args, p, n, hv)               load initial statistics of sequence n (or zero);
//     queries(args, p, bt, t0, L, hv, Q, Kc, default_log_decay) -> const Mat&
//                                         return Q̃ (L×K, before scale) for tokens t0 .. t0+L−1 of batch row bt,
//                                         and advance the statistics past the chunk. Q and Kc are the chunk's
//                                         queries and keys (L×K, after the in-kernel L2 norm); default_log_decay
//                                         (length L) is each token's mean_log_decay (the scalar g, the mean of gk
//                                         over K, or 0). Mat = chunk::mat<R> (L×K, row-major Eigen matrix) and
//                                         Vec = chunk::vec<R> (include/linea/chunk/matrix.hpp); chunks arrive in
//                                         order and never cross a sequence boundary. The returned reference must
//                                         stay valid until the next call;
//     end(args, p, n, hv)                 store final statistics.
struct identity {
  static constexpr bool is_identity = true;

  template <class T, class S>
  static void validate(const arguments<T, S>& a, const problem&) {
    using detail::expect_absent;
    const char* why = "it belongs to the CCQ read, and this call uses the identity read";
    expect_absent(a.ccq.lambda, "ccq.lambda", why);
    expect_absent(a.ccq.log_decay, "ccq.log_decay", why);
    expect_absent(a.ccq.C0, "ccq.C0", why);
    expect_absent(a.ccq.m0, "ccq.m0", why);
    expect_absent(a.ccq.z0, "ccq.z0", why);
    expect_absent(a.ccq.C, "ccq.C", why);
    expect_absent(a.ccq.m, "ccq.m", why);
    expect_absent(a.ccq.z, "ccq.z", why);
    expect_absent(a.ccq.q_tilde, "ccq.q_tilde", why);
  }

  template <class R>
  struct carried {
    explicit carried(const problem&) {}
    template <class A>
    void begin(const A&, const problem&, index_t, index_t) {}
    template <class A>
    const R* query(const A&, const problem&, index_t, index_t, index_t, const token<R>& x, R) {
      return x.q;
    }
    template <class A>
    void end(const A&, const problem&, index_t, index_t) {}
  };

  // Chunkwise: Q̃ = Q. Templated on the matrix types so that this header does not need Eigen.
  template <class R>
  struct chunk_carried {
    explicit chunk_carried(const problem&) {}
    template <class A>
    void begin(const A&, const problem&, index_t, index_t) {}
    template <class A, class Mat, class Vec>
    const Mat& queries(const A&, const problem&, index_t /*bt*/, index_t /*t0*/, index_t /*L*/, index_t /*hv*/,
                       const Mat& Q, const Mat& /*Kc*/, const Vec& /*default_log_decay*/) {
      return Q;
    }
    template <class A>
    void end(const A&, const problem&, index_t, index_t) {}
  };
};

}  // namespace linea::read
