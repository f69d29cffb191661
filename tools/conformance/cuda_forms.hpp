// tools/conformance/cuda_forms.hpp — the CUDA backend's forms for the conformance runner (linea_cuda_conformance):
// the case's arguments mirrored on the GPU, the form run there, the outputs copied back and compared as usual;
// and the CUDA backward (a backward form, backward_forms.hpp): arguments and gradients mirrored, gradients back.
#pragma once
#include <linea/backend/cuda/mirror.hpp>
#include <linea/cuda.hpp>

#include "backward_case.hpp"
#include "case_arguments.hpp"

namespace linea::conformance {

template <class Backend, int Form>  // Form: 0 recurrent, 1 chunkwise
struct cuda_form {
  std::string name() const { return Form == 0 ? "cuda/recurrent" : "cuda/chunkwise"; }
  std::string not_applicable(const conformance_case& c) const {
    if (c.file("q").dtype != "float32") return "the CUDA backend takes float32 / bf16 / fp16 inputs";
    if (Form == 1 && (c.params()["K"].template get<index_t>() > 128 || c.params()["V"].template get<index_t>() > 128))
      return "the CUDA chunkwise form covers K, V <= 128";
    return {};
  }
  template <class Rule, class Read, class T, class S>
  void run(const case_inputs<T, S>& in, case_outputs<T, S>& out) const {
    if constexpr (!std::is_same_v<T, float>) {
      throw error("the CUDA backend takes float32 inputs here");
    } else {
      arguments<T, S> a = in.args;
      out.attach(a);
      cuda::mirror<T, S> m(a);
      if constexpr (Form == 0) linea::recurrent<Rule, Read, Backend>(m.device);
      else linea::chunkwise<Rule, Read, Backend>(m.device);
      m.copy_back();
    }
  }
};

// linea::backward<Rule, Read, backend::cuda> with float32 inputs. The case sets store float32 inputs with truths
// for exactly those inputs, so bf16 inputs would be compared with truths of other (unrounded) inputs: not run.
struct cuda_backward_form {
  using input_type = float;
  std::string name() const { return "cuda/backward"; }

  // What backend/cuda/backward.hpp static_asserts: the identity or CCQ read, a rule whose update adds or erases with β.
  template <class Rule, class Read>
  static constexpr bool takes =
      (std::is_same_v<Read, read::identity> || read::is_ccq<Read>) && cuda_detail::bwd::supported_rule<Rule>;
  template <class Rule, class Read>
  static std::string cannot_take() {
    if constexpr (!std::is_same_v<Read, read::identity> && !read::is_ccq<Read>) return "the read has no CUDA backward";
    else if constexpr (!cuda_detail::bwd::supported_rule<Rule>) return "the rule has no CUDA backward (channel gates b, w)";
    else return {};
  }

  // What it rejects at run time (linea::error), known from the case before running; any other error fails the case.
  std::string skip(const conformance_case& c) const {
    if (c.file("q").dtype != "float32") return "the CUDA backward takes float32 / bf16 / fp16 inputs";
    if (c.flag("normalize") && c.read_policy() != "identity")
      return "option normalize with the CCQ read is not supported by the CUDA backward";
    const index_t K = c.file("q").shape.back(), V = c.file("v").shape.back();
    if (K > cuda_detail::bwd::max_kv || V > cuda_detail::bwd::max_kv)
      return "the CUDA backward covers K, V <= " + std::to_string(cuda_detail::bwd::max_kv);
    return {};
  }

  template <class Rule, class Read, class S>
  void run(const case_inputs<float, S>& in, case_gradients<float, S>& g) const {
    cuda::mirror<float, S> m(in.args);
    cuda::gradient_mirror<float, S> gm(g.grads);
    linea::backward<Rule, Read, backend::cuda>(m.device, gm.device);
    gm.copy_back();
  }
};

inline auto cuda_backward_forms() { return std::tuple{cuda_backward_form{}}; }

inline auto cuda_forms() { return std::tuple{cuda_form<backend::cuda, 0>{}, cuda_form<backend::cuda, 1>{}}; }

}  // namespace linea::conformance
