// bench/cuda/ccq_ab/side.cu — one side of the A/B driver: a chunkwise call of the case's rule and read (ccq_ab.hpp).
#include <cuda_runtime.h>

#include <span>

#include <linea/cuda.hpp>

#include "ccq_ab.hpp"

using namespace linea;
using T = bf16;

namespace {

template <class Rule, class Read>
void call(const ab_case& c, const ab_buffers& x, cudaStream_t s) {
  const index_t B = c.B, T_ = c.T, H = c.H, HV = c.HV, K = c.K, V = c.V;
  const index_t N = c.cu ? c.ncu - 1 : B;
  const auto in4 = [&](void* p, index_t h, index_t d, index_t off = 0) {
    return contiguous<4>(static_cast<const T*>(p) + off, {B, T_, h, d});
  };
  const auto in3 = [&](void* p) { return contiguous<3>(static_cast<const T*>(p), {B, T_, HV}); };
  arguments<T, float> a;
  a.q = in4(x.q, H, K, c.offset), a.k = in4(x.k, H, K, c.offset), a.v = in4(x.v, HV, V);
  if constexpr (reads(Rule::inputs, input::g)) a.g = in3(c.extreme ? x.gx : x.g);
  if constexpr (reads(Rule::inputs, input::gk)) a.gk = in4(c.extreme ? x.gkx : x.gk, HV, K);
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = in3(x.beta);
  a.o = contiguous<4>(static_cast<T*>(x.o), {B, T_, HV, V});
  a.final_state = contiguous<4>(x.state, {N, HV, K, V});
  if (c.cu) a.cu_seqlens = std::span<const std::int64_t>(c.cu, static_cast<std::size_t>(c.ncu));
  a.qk_l2norm = c.l2;
  if constexpr (!Read::is_identity) {
    a.ccq.lambda = in3(x.lam);
    a.ccq.C = contiguous<4>(x.C, {N, HV, K, K});
    a.ccq.m = contiguous<3>(x.m, {N, HV, K});
    a.ccq.z = contiguous<2>(x.z, {N, HV});
    if (c.initial_stats) {
      a.ccq.C0 = contiguous<4>(static_cast<const float*>(x.C0), {N, HV, K, K});
      a.ccq.m0 = contiguous<3>(static_cast<const float*>(x.m0), {N, HV, K});
      a.ccq.z0 = contiguous<2>(static_cast<const float*>(x.z0), {N, HV});
    }
    if (c.explicit_log_decay) a.ccq.log_decay = in3(x.logd);
    if (c.q_tilde) a.ccq.q_tilde = contiguous<4>(static_cast<T*>(x.qt), {B, T_, HV, K});
  }
  linea::chunkwise<Rule, Read, backend::cuda>(a, cuda::launch{.stream = s});
}

template <class Rule>
void call_read(const ab_case& c, const ab_buffers& x, cudaStream_t s) {
  if (c.read == 0) call<Rule, read::identity>(c, x, s);
  else if (c.read == 1) call<Rule, read::ccq<read::uniform>>(c, x, s);
  else call<Rule, read::ccq<read::decayed>>(c, x, s);
}

}  // namespace

void AB_CAT(ccq_ab_call, AB_SIDE)(const ab_case& c, const ab_buffers& x, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (c.rule) {
    case 0: call_read<additive>(c, x, s); break;
    case 1: call_read<gated_delta>(c, x, s); break;
    case 2: call_read<gla>(c, x, s); break;
    default: call_read<kda>(c, x, s); break;
  }
}
