// linea/backend/cuda/instances.hpp — the CUDA forms of a rule compiled once, in a library of their own, rather than
// again in every translation unit that calls them (nvcc compiles every kernel a TU reaches, for every -gencode).
//
//   // one .cu per rule, in a static library (linea's own: tests/backend/cuda/instances/):
//   #include <linea/cuda.hpp>
//   LINEA_CUDA_INSTANCES(, linea::kda)                 // explicit instantiation definitions
//
//   // every TU that links the library: compile with -DLINEA_CUDA_EXTERN_INSTANCES; <linea/cuda.hpp> then declares
//   // linea's rules' instances extern, and calls of them compile no kernel there.
//
// The instances: every rule × form (recurrent, chunkwise, step) × read × input type, with float / bf16 / fp16
// for the identity read and float / bf16 for the CCQ reads; and the backward (linea::backward<Rule, Read,
// backend::cuda>) of every (rule, read) in LINEA_CUDA_BACKWARD_LIST, float and bf16 inputs, and of every rule
// with the CCQ reads, float inputs. A combination outside
// the lists still works where it is called: it is instantiated there, as without the library.
#pragma once
#include "backward.hpp"
#include "backward_phase_instances.hpp"  // the backward's phase launchers, shared by the rules' backwards
#include "forms.hpp"

#include "../../read/ccq.hpp"
#include "../../rules/list.hpp"

#define LINEA_CUDA_RUN_INSTANCE(prefix, Rule, Read, F, T)                                                     \
  prefix template void linea::cuda_detail::run<Rule, Read, linea::cuda_detail::form::F, T>(                  \
      const linea::arguments<T, float>&, const linea::problem&, const linea::cuda::launch&, bool);

#define LINEA_CUDA_FORM_INSTANCES(prefix, Rule, F)                                                            \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::identity, F, float)                                      \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::identity, F, linea::bf16)                                \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::identity, F, linea::fp16)                                \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::uniform>, F, float)                     \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::uniform>, F, linea::bf16)               \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::decayed>, F, float)                     \
  LINEA_CUDA_RUN_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::decayed>, F, linea::bf16)

// prefix: empty (definitions, in the library) or extern (declarations).
#define LINEA_CUDA_INSTANCES(prefix, Rule)                                                                    \
  LINEA_CUDA_FORM_INSTANCES(prefix, Rule, recurrent)                                                          \
  LINEA_CUDA_FORM_INSTANCES(prefix, Rule, chunkwise)                                                          \
  LINEA_CUDA_FORM_INSTANCES(prefix, Rule, step)

// The backward of (Rule, Read), float32 and bf16 inputs: what linea's binaries call (the Python module and the
// conformance runner float32, the benchmark bf16, the tests both); fp16 is instantiated where it is called.
// Two declarations: backward_impl<cuda>::run (the entry, host side) and cuda_detail::bwd::run (the launches). nvcc
// honours `extern template` on the device side only for a namespace-scope function template: for the member
// template alone, a unit still compiles every kernel its body reaches. (bwd::run's signature changing means
// changing the second line here.)
#define LINEA_CUDA_BACKWARD_INSTANCE(prefix, Rule, Read, T)                                                   \
  prefix template void linea::detail::backward_impl<linea::backend::cuda>::run<Rule, Read, T, float>(        \
      const linea::arguments<T, float>&, const linea::gradients<T, float>&, const linea::cuda::launch&);     \
  prefix template void linea::cuda_detail::bwd::run<Rule, Read, T>(const linea::arguments<T, float>&,        \
                                                                   const linea::gradients<T, float>&,        \
                                                                   const linea::problem&,                    \
                                                                   const linea::cuda::launch&);

#define LINEA_CUDA_BACKWARD_INSTANCES(prefix, Rule, Read)                                                     \
  LINEA_CUDA_BACKWARD_INSTANCE(prefix, Rule, Read, float)                                                     \
  LINEA_CUDA_BACKWARD_INSTANCE(prefix, Rule, Read, linea::bf16)

// The CCQ reads' backward, float32 inputs only (what the Python module, which widens 16-bit inputs for its
// backward, and the conformance runner call): both weightings.
#define LINEA_CUDA_CCQ_BACKWARD_INSTANCES(prefix, Rule)                                                       \
  LINEA_CUDA_BACKWARD_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::uniform>, float)                   \
  LINEA_CUDA_BACKWARD_INSTANCE(prefix, Rule, linea::read::ccq<linea::read::decayed>, float)

// The (rule, read) pairs whose CUDA backward the library holds, one line each. A pair joins with its line here
// and LINEA_CUDA_BACKWARD_INSTANCES(, rule, read) in tests/backend/cuda/instances/<rule>.cu (a line here without
// that one fails to link; that one without a line here compiles the backward twice).
#define LINEA_CUDA_BACKWARD_LIST(X)                                                                           \
  X(linea::additive, linea::read::identity)                                                                   \
  X(linea::simple_gla, linea::read::identity)                                                                 \
  X(linea::gla, linea::read::identity)                                                                        \
  X(linea::delta, linea::read::identity)                                                                      \
  X(linea::gated_delta, linea::read::identity)                                                                \
  X(linea::kda, linea::read::identity)                                                                        \
  X(linea::gdn2, linea::read::identity)

#if defined(LINEA_CUDA_EXTERN_INSTANCES)
// LINEA_RULES, one line each (a preprocessor loop over the list is not worth its macros; the assertion keeps the
// two in step).
static_assert(linea::all_rules::size == 7,
              "a rule joined LINEA_RULES: add its line here and its tests/backend/cuda/instances/<rule>.cu");
// A rule's forms and its CCQ backward, declared.
#define LINEA_CUDA_EXTERN_RULE(Rule)                                                                          \
  LINEA_CUDA_INSTANCES(extern, Rule)                                                                          \
  LINEA_CUDA_CCQ_BACKWARD_INSTANCES(extern, Rule)
LINEA_CUDA_EXTERN_RULE(linea::additive)
LINEA_CUDA_EXTERN_RULE(linea::simple_gla)
LINEA_CUDA_EXTERN_RULE(linea::gla)
LINEA_CUDA_EXTERN_RULE(linea::delta)
LINEA_CUDA_EXTERN_RULE(linea::gated_delta)
LINEA_CUDA_EXTERN_RULE(linea::kda)
LINEA_CUDA_EXTERN_RULE(linea::gdn2)
#undef LINEA_CUDA_EXTERN_RULE
#define LINEA_CUDA_EXTERN_BACKWARD(Rule, Read) LINEA_CUDA_BACKWARD_INSTANCES(extern, Rule, Read)
LINEA_CUDA_BACKWARD_LIST(LINEA_CUDA_EXTERN_BACKWARD)
#undef LINEA_CUDA_EXTERN_BACKWARD
#endif
