// tools/conformance/backward_case.hpp — the gradient part of a *_grad case: dL/do and dL/dS_T in, every
// gradient truth d<x>_ref64 out (format: ../shared/conformance/README.md).
//
//   grad inputs   do → d_o,  dht → d_final_state
//   truths        dq, dk, dv, dg (dgk for per-key rules: fla names gk "g"; g_gamma's [H] or [HV]), dbeta, db, dw, dh0 → d_initial_state,
//                 dlam → dlambda, dccq_g → dccq_log_decay, dccq_C0/m0/z0 → dC0/dm0/dz0, dA_log, ddt_bias
// Every truth the case holds is computed and compared; a truth this runner cannot map fails the case.
#pragma once
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <linea/linea.hpp>
#include <linea/reference/backward.hpp>

#include "case_arguments.hpp"
#include "manifest.hpp"
#include "support/compare.hpp"

namespace linea::conformance {

template <class T, class S = accumulate_t<T>>
class case_gradients {
 public:
  // Reads do, dht and sets up one NaN-filled output per gradient truth of `c` (inputs `in` give the shapes).
  case_gradients(const conformance_case& c, const case_inputs<T, S>& in) {
    const arguments<T, S>& a = in.args;
    d_o_ = read_as<T>(c, "do");
    grads.d_o = contiguous<4>(static_cast<const T*>(d_o_.data()), {in.B, in.T_, in.HV, in.V});
    if (c.has("dht")) {
      dht_ = read_as<S>(c, "dht");
      grads.d_final_state = contiguous<4>(static_cast<const S*>(dht_.data()), {in.N, in.HV, in.K, in.V});
    }
    for (const std::string& truth : c.gradient_truths()) {
      const std::string x = truth.substr(1, truth.size() - 1 - std::string("_ref64").size());  // "dq_ref64" → "q"
      if (x == "q") out<T>(truth, grads.dq, {in.B, in.T_, in.H, in.K});
      else if (x == "k") out<T>(truth, grads.dk, {in.B, in.T_, in.H, in.K});
      else if (x == "v") out<T>(truth, grads.dv, {in.B, in.T_, in.HV, in.V});
      else if (x == "g_gamma" || (x == "g" && c.flag("g_gamma"))) out_gamma(c, truth, in);
      else if (x == "g" && !a.gk.empty()) out<T>(truth, grads.dgk, {in.B, in.T_, in.HV, in.K});
      else if (x == "g") out<T>(truth, grads.dg, {in.B, in.T_, in.HV});
      else if (x == "beta") out<T>(truth, grads.dbeta, {in.B, in.T_, in.HV});
      else if (x == "b") out<T>(truth, grads.db, {in.B, in.T_, in.HV, in.K});
      else if (x == "w") out<T>(truth, grads.dw, {in.B, in.T_, in.HV, in.V});
      else if (x == "h0") out<S>(truth, grads.d_initial_state, {in.N, in.HV, in.K, in.V});
      else if (x == "lam") out<T>(truth, grads.dlambda, {in.B, in.T_, in.HV});
      else if (x == "ccq_g") out<T>(truth, grads.dccq_log_decay, {in.B, in.T_, in.HV});
      else if (x == "ccq_C0") out<S>(truth, grads.dC0, {in.N, in.HV, in.K, in.K});
      else if (x == "ccq_m0") out<S>(truth, grads.dm0, {in.N, in.HV, in.K});
      else if (x == "ccq_z0") out<S>(truth, grads.dz0, {in.N, in.HV});
      else if (x == "A_log") out<S>(truth, grads.dA_log, {in.HV});
      else if (x == "dt_bias") out<S>(truth, grads.ddt_bias, {a.gate.dt_bias.extent(0)});
      else throw case_error("gradient truth '" + truth + "' names an input this runner does not know");
    }
  }
  case_gradients(const case_gradients&) = delete;
  case_gradients& operator=(const case_gradients&) = delete;

  // Every computed gradient against its truth: (name without "_ref64", relative error).
  std::vector<check> compare(const conformance_case& c) const {
    std::vector<check> checks;
    for (const output& o : outputs_) {
      const std::vector<double> ref = c.file(o.truth).template read<double>();
      if (ref.size() != o.size)
        throw case_error("truth '" + o.truth + "' has " + std::to_string(ref.size()) + " values; the gradient has " +
                         std::to_string(o.size));
      checks.push_back({o.truth.substr(0, o.truth.size() - 6), o.error(ref.data())});
    }
    return checks;
  }

  gradients<T, S> grads;

 private:
  struct output {
    std::string truth;
    std::size_t size;
    std::function<double(const double*)> error;  // ‖x − ref‖ / ‖ref‖ of the gradient buffer
  };

  template <class E>
  static std::vector<E> read_as(const conformance_case& c, const std::string& name) {
    return c.file(name).template read<E>();
  }

  // A NaN-filled contiguous buffer of element type E (T or S) for `truth`, seen by `view`.
  template <class E, class View>
  void out(const std::string& truth, View& view, const std::array<index_t, View::rank>& ext) {
    auto buffer = std::make_shared<std::vector<E>>();
    index_t n = 1;
    for (index_t e : ext) n *= e;
    buffer->assign(static_cast<std::size_t>(n), E(std::nan("")));
    view = contiguous<View::rank>(buffer->data(), ext);
    outputs_.push_back({truth, buffer->size(), [buffer](const double* ref) {
                          return testing::relative_error(buffer->data(), ref, buffer->size());
                        }});
  }

  // g_gamma's gradient: dg as a view with stride 0 over B and T of an [HV] buffer, so that each value head's
  // element receives the sum over every token (core/summed_store.hpp); a truth stored per key head ([H], as
  // g_gamma may be) is that summed over the G value heads of each key head.
  void out_gamma(const conformance_case& c, const std::string& truth, const case_inputs<T, S>& in) {
    const index_t H = in.H, HV = in.HV, stored = c.file(truth).elements();
    if (stored != HV && stored != H)
      throw case_error("gradient truth '" + truth + "' has " + std::to_string(stored) + " values; expected g_gamma's H = " +
                       std::to_string(H) + " or HV = " + std::to_string(HV));
    auto buffer = std::make_shared<std::vector<T>>(static_cast<std::size_t>(HV), T(std::nan("")));
    grads.dg = strided<3>(buffer->data(), {in.B, in.T_, HV}, {0, 0, 1});
    outputs_.push_back({truth, static_cast<std::size_t>(stored), [buffer, H, HV, stored](const double* ref) {
                          std::vector<double> per(static_cast<std::size_t>(stored), 0.0);
                          for (index_t hv = 0; hv < HV; ++hv)
                            per[static_cast<std::size_t>(stored == HV ? hv : hv / (HV / H))] += double((*buffer)[hv]);
                          return testing::relative_error(per.data(), ref, per.size());
                        }});
  }

  std::vector<T> d_o_;
  std::vector<S> dht_;
  std::vector<output> outputs_;
};

}  // namespace linea::conformance
