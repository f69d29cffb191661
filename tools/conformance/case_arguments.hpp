// tools/conformance/case_arguments.hpp — a case's tensors and params turned into linea::arguments.
//
// case_inputs<T> loads the inputs (converted to the input type T) and fills every option the params name:
//   h0 → initial_state, cu_seqlens, scale, use_qk_l2norm_in_kernel → qk_l2norm, normalize,
//   use_gate_in_kernel → gate {A_log, dt_bias, lower_bound}, g_gamma → a g view with stride 0 over B and T.
// case_outputs<T> owns the outputs a form writes and compares them with the case's float64 truths.
#pragma once
#include <cmath>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <linea/linea.hpp>

#include "ccq_case.hpp"
#include "manifest.hpp"
#include "support/compare.hpp"

namespace linea::conformance {

// params keys that describe the case or are read below; any other key set to `true` is an option this
// runner does not know, and the case fails rather than run without it.
inline const std::set<std::string>& known_params() {
  static const std::set<std::string> keys = {
      "B", "T", "H", "HV", "K", "V", "N", "scale", "cu_seqlens", "has_initial_state", "use_qk_l2norm_in_kernel",
      "use_gate_in_kernel", "safe_gate", "lower_bound", "normalize", "g_gamma", "input_rounding", "seed", "read",
      "ccq_weighting", "ccq_g_source"};
  return keys;
}

inline void check_known_params(const conformance_case& c) {
  for (const auto& [key, value] : c.params().items())
    if (!known_params().count(key) && !key.ends_with("_distribution") && value.is_boolean() && value.get<bool>())
      throw case_error("params." + key + " = true is an option this runner does not know");
}

template <class T, class S = accumulate_t<T>>
class case_inputs {
 public:
  // Loads the inputs of case `c` for write rule `Rule`. The object owns the buffers `args` points into,
  // so it is neither copied nor moved.
  template <class Rule>
  case_inputs(const conformance_case& c, std::type_identity<Rule>) {
    check_known_params(c);
    args.q = load<4>(c, "q", q_);
    args.k = load<4>(c, "k", k_);
    args.v = load<4>(c, "v", v_);
    B = args.q.extent(0), T_ = args.q.extent(1), H = args.q.extent(2), K = args.q.extent(3);
    HV = args.v.extent(2), V = args.v.extent(3);

    // Gates: a scalar rule reads `g` [B, T, HV] (or the constant g_gamma), a per-key rule `gk` (fla names it g).
    if constexpr (linea::reads(Rule::inputs, linea::input::g)) {
      if (c.flag("g_gamma")) {
        args.g = gamma_view(c);
      } else {
        args.g = load<3>(c, "g", g_);
      }
    }
    if constexpr (linea::reads(Rule::inputs, linea::input::gk)) args.gk = load<4>(c, c.has("gk") ? "gk" : "g", gk_);
    if constexpr (linea::reads(Rule::inputs, linea::input::beta)) args.beta = load<3>(c, "beta", beta_);
    if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) {
      args.b = load<4>(c, "b", b_);
      args.w = load<4>(c, "w", w_);
    }

    // Sequences and states.
    if (c.has("cu_seqlens")) {
      cu_ = c.file("cu_seqlens").template read<std::int64_t>();
    } else if (c.given("cu_seqlens")) {
      cu_ = c.params()["cu_seqlens"].template get<std::vector<std::int64_t>>();
    }
    args.cu_seqlens = cu_;
    N = cu_.empty() ? B : static_cast<index_t>(cu_.size()) - 1;
    if (c.has("h0")) {
      args.initial_state = load<4>(c, "h0", h0_);
    } else if (c.flag("has_initial_state")) {
      throw case_error("params.has_initial_state is true but the case has no tensor 'h0'");
    }
    longest = cu_.empty() ? T_ : 0;
    for (std::size_t n = 0; n + 1 < cu_.size(); ++n) longest = std::max<index_t>(longest, cu_[n + 1] - cu_[n]);

    // Options.
    if (c.given("scale")) args.scale = c.params()["scale"].template get<double>();
    args.qk_l2norm = c.flag("use_qk_l2norm_in_kernel");
    args.normalize = c.flag("normalize");
    if (c.flag("use_gate_in_kernel")) {
      A_log_ = c.file("A_log").template read<float>();
      args.gate.A_log = contiguous<1>(static_cast<const float*>(A_log_.data()), {index_t(A_log_.size())});
      if (c.has("dt_bias")) {
        dt_bias_ = c.file("dt_bias").template read<float>();  // [HV] or [HV, K]: flattened to [HV·K]
        args.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias_.data()), {index_t(dt_bias_.size())});
      }
      if (c.given("lower_bound")) args.gate.lower_bound = c.params()["lower_bound"].template get<float>();
    }
    ccq_.load(c, args);  // λ, the statistics' log decay and initial statistics of a CCQ case
  }
  case_inputs(const case_inputs&) = delete;
  case_inputs& operator=(const case_inputs&) = delete;

  arguments<T, S> args;  // every input and option; the outputs are attached by case_outputs
  index_t B = 0, T_ = 0, H = 0, HV = 0, K = 0, V = 0, N = 0;
  index_t longest = 0;  // the longest sequence: it picks the SPEC §5 bound

 private:
  // A stored tensor of rank R as a contiguous view over `buffer` (converted to its element type E).
  template <int R, class E>
  view<const E, R> load(const conformance_case& c, const std::string& name, std::vector<E>& buffer) {
    const stored_tensor& st = c.file(name);
    if (st.rank() != R)
      throw case_error("tensor '" + name + "' has rank " + std::to_string(st.rank()) + "; expected " + std::to_string(R));
    buffer = st.template read<E>();
    std::array<index_t, R> ext;
    for (int r = 0; r < R; ++r) ext[r] = st.shape[r];
    return contiguous<R>(static_cast<const E*>(buffer.data()), ext);
  }

  // g_gamma [H] or [HV]: one log decay per head, the same at every b and t: a view with stride 0 over b, t.
  view<const T, 3> gamma_view(const conformance_case& c) {
    const stored_tensor& st = c.file("g_gamma");
    std::vector<T> per_head = st.template read<T>();
    const auto n = static_cast<index_t>(per_head.size());
    if (n == HV) {
      g_ = per_head;
    } else if (n == H && HV % H == 0) {  // key heads: value head hv uses head hv / G
      g_.resize(static_cast<std::size_t>(HV));
      for (index_t hv = 0; hv < HV; ++hv) g_[hv] = per_head[hv / (HV / H)];
    } else {
      throw case_error("tensor 'g_gamma' has " + std::to_string(n) + " entries; expected H = " + std::to_string(H) +
                       " or HV = " + std::to_string(HV));
    }
    return strided<3>(static_cast<const T*>(g_.data()), {B, T_, HV}, {0, 0, 1});
  }

  std::vector<T> q_, k_, v_, g_, gk_, beta_, b_, w_;
  std::vector<S> h0_;
  std::vector<std::int64_t> cu_;
  std::vector<float> A_log_, dt_bias_;
  ccq_case_inputs<T, S> ccq_;
};

// One output compared with its truth.
struct check {
  std::string name;  // "o", "ht", "u"
  double error;      // ‖x − ref‖ / ‖ref‖
};

template <class T, class S = accumulate_t<T>>
class case_outputs {
 public:
  // Outputs shaped for the case: o [B, T, HV, V], ht [N, HV, K, V], and the residual u when the case
  // holds its truth u_ref64. Filled with NaN, so that anything a form leaves unwritten fails the check.
  case_outputs(const conformance_case& c, const case_inputs<T, S>& in) {
    const double nan = std::nan("");
    o = tensor<T, 4>({in.B, in.T_, in.HV, in.V}, T(nan));
    ht = tensor<S, 4>({in.N, in.HV, in.K, in.V}, S(nan));
    if (c.has("u_ref64")) u = tensor<T, 4>({in.B, in.T_, in.HV, in.V}, T(nan));
    ccq.shape(c, in.B, in.T_, in.N, in.HV, in.K);
  }

  // Points the output views of `a` at these buffers.
  void attach(arguments<T, S>& a) {
    a.o = o;
    a.final_state = ht;
    if (u.size()) a.residual = u;
    ccq.attach(a);
  }

  // Every output against its float64 truth: o ↔ o_ref64, ht ↔ ht_ref64, u ↔ u_ref64 (where present).
  std::vector<check> compare(const conformance_case& c) const {
    std::vector<check> out;
    compare_one(c, "o", o, "o_ref64", out);
    if (c.has("ht_ref64")) compare_one(c, "ht", ht, "ht_ref64", out);
    if (c.has("u_ref64")) compare_one(c, "u", u, "u_ref64", out);
    ccq.compare(c, out);  // q̃, C, m, z of a CCQ case
    return out;
  }

  tensor<T, 4> o, u;
  tensor<S, 4> ht;
  ccq_case_outputs<T, S> ccq;

 private:
  template <class X>
  static void compare_one(const conformance_case& c, const char* name, const tensor<X, 4>& x, const std::string& truth,
                          std::vector<check>& out) {
    const std::vector<double> ref = c.file(truth).template read<double>();
    if (ref.size() != x.size())
      throw case_error("truth '" + truth + "' has " + std::to_string(ref.size()) + " values; the output " + name +
                       " has " + std::to_string(x.size()));
    out.push_back({name, testing::relative_error(x.data(), ref.data(), x.size())});
  }
};

}  // namespace linea::conformance
