// tools/conformance/cuda_forms.hpp — the CUDA backend's forms for the conformance runner (linea_cuda_conformance):
// the case's arguments mirrored on the GPU, the form run there, the outputs copied back and compared as usual.
#pragma once
#include <linea/backend/cuda/mirror.hpp>
#include <linea/cuda.hpp>

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

inline auto cuda_forms() { return std::tuple{cuda_form<backend::cuda, 0>{}, cuda_form<backend::cuda, 1>{}}; }

}  // namespace linea::conformance
