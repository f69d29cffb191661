// tools/conformance/backward_forms.hpp — the backwards the runner puts every gradient case (*_grad) through.
//
// A backward form is a type with
//   input_type                        the type the case's inputs are converted to (its SPEC §6 bound);
//   name()                            how it is printed ("backward/float32", "backward/cpu/float32", "cuda/backward", ...);
//   takes<Rule, Read>                 false where linea::backward does not compile for the pair (the form's
//                                     backend static_asserts); the runner then never instantiates run() for it;
//   cannot_take<Rule, Read>()         why not, for the SKIP line;
//   skip(case)                        an option of the case the backend rejects at run time, or "" (it runs);
//   run<Rule, Read>(inputs, grads)    fills every gradient of `grads` from the case's inputs.
// all_backward_forms() lists them, as all_forms() does the forward forms.
#pragma once
#include <string>
#include <tuple>
#include <type_traits>

#include <linea/linea.hpp>
#include <linea/reference/backward.hpp>

#include "backward_case.hpp"
#include "case_arguments.hpp"

namespace linea::conformance {

// linea::reference::backward with the case's inputs converted to T: every rule, read and option.
template <class T>
struct reference_backward_form {
  using input_type = T;
  std::string name() const { return std::is_same_v<T, double> ? "backward/float64" : "backward/float32"; }
  template <class Rule, class Read>
  static constexpr bool takes = true;
  template <class Rule, class Read>
  static std::string cannot_take() { return {}; }
  std::string skip(const conformance_case&) const { return {}; }

  template <class Rule, class Read, class S>
  void run(const case_inputs<T, S>& in, case_gradients<T, S>& g) const {
    reference::backward<Rule, Read>(in.args, g.grads);
  }
};

// linea::backward on the CPU backend (backend/cpu/backward.hpp) with the case's inputs converted to T: every rule,
// read and option; chunks of 16 tokens (the cases' T = 40, 63 span several chunks, one partial) on 2 threads.
template <class T>
struct cpu_backward_form {
  using input_type = T;
  std::string name() const { return std::is_same_v<T, double> ? "backward/cpu/float64" : "backward/cpu/float32"; }
  template <class Rule, class Read>
  static constexpr bool takes = true;
  template <class Rule, class Read>
  static std::string cannot_take() { return {}; }
  std::string skip(const conformance_case&) const { return {}; }

  template <class Rule, class Read, class S>
  void run(const case_inputs<T, S>& in, case_gradients<T, S>& g) const {
    arguments<T, S> a = in.args;
    a.chunk_size = 16;
    a.threads = 2;
    linea::backward<Rule, Read, backend::cpu>(a, g.grads);
  }
};

}  // namespace linea::conformance

#if defined(LINEA_CONFORMANCE_CUDA)
#include "cuda_forms.hpp"
namespace linea::conformance {
// linea_cuda_conformance: the CUDA backward only (cuda_forms.hpp), as all_forms() there has only CUDA forms.
inline auto all_backward_forms() { return cuda_backward_forms(); }
}  // namespace linea::conformance
#else
namespace linea::conformance {
inline auto all_backward_forms() {
  return std::tuple{reference_backward_form<double>{}, reference_backward_form<float>{}, cpu_backward_form<double>{},
                    cpu_backward_form<float>{}};
}
}  // namespace linea::conformance
#endif
