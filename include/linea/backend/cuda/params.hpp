// linea/backend/cuda/params.hpp — what a kernel receives: the caller's views (device pointers, any strides),
// the problem sizes and the options, as one trivially copyable struct passed by value.
//
// cu_seqlens and state_indices reach the kernels as device pointers: host spans of linea::arguments copied into
// the call's workspace, or the caller's device arrays (cuda::launch). Every view must hold device memory, which is
// checked before anything is launched.
#pragma once
#include "check.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include "../../core/arguments.hpp"
#include "../../core/error.hpp"

namespace linea::cuda_detail {

// Which recurrence a launch computes: the rule itself, or (for the CCQ read) the key statistics
// C_t = a_t C_{t-1} + k_t k_tᵀ read with q_t — the same kernel with values := keys and a scalar decay c_t.
enum class pass { main, stats };

template <class In>
struct kernel_args {
  // ---- inputs -----------------------------------------------------------------------------------
  view<const In, 4> q, k, v, gk, b, w;
  view<const In, 3> g, beta;
  view<const float, 1> A_log, dt_bias;
  view<const float, 4> initial_state;
  const std::int64_t* cu_seqlens = nullptr;    // [N+1] on the device, or null
  const std::int32_t* cu_seqlens32 = nullptr;  // the same as int32 (cuda::launch), or null
  const std::int32_t* state_indices = nullptr;  // [B] on the device, or null (decode step)
  // ---- outputs ----------------------------------------------------------------------------------
  view<In, 4> o, residual;
  view<float, 4> final_state;
  // ---- CCQ --------------------------------------------------------------------------------------
  view<const float, 4> q_tilde_in;  // main pass: cleaned queries [B, T, HV, K] (replace q, no L2 norm)
  view<const In, 3> ccq_log_decay;   // stats pass: the caller's c_t, or empty
  bool ccq_decays = false;          // stats pass: decayed weighting (else a_t = 1)
  view<const float, 4> C0;          // stats pass: initial / final C [N, HV, K, K]
  view<float, 4> C;
  view<float, 4> y;                 // stats pass output: Y_t = C_t q̂_t [B, T, HV, K]
  // ---- sizes and options ------------------------------------------------------------------------
  index_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0, N = 0, G = 1;
  float scale = 1;
  bool l2q = false, l2k = false, normalize = false;
  // The segmented forward's passes A and M (segments/forward.hpp): only the final states are used, so the chunk
  // kernels that know this flag (delta_pipeline_kernel.hpp, chunk_kernel.hpp) skip the query side — q, Q S, the
  // intra-chunk Q Kᵀ terms — and the stores of o (and residual); the others write o as usual (o is a real buffer).
  bool states_only = false;
  int beta_act = 0;  // beta_activation as int
  bool gate_active = false, has_lower_bound = false;
  float lower_bound = 0;
};

// Throws when a given view does not point to memory of `device` (the call's, the current device): a host pointer
// would fault inside the kernel, and another GPU's memory would be read over the interconnect at best (peer access)
// or fault. Managed memory is accepted on any device. cudaPointerGetAttributes costs microseconds, which matters to a
// decode step called every token: the last (pointer, device) pairs found good are remembered (per host thread), so a
// serving loop pays for the check once.
template <class P>
void expect_device(const P* ptr, const char* name, int device) {
  if (ptr == nullptr) return;
  struct seen_pointer {
    const void* ptr;
    int device;
  };
  constexpr int remembered = 64;
  thread_local seen_pointer seen[remembered] = {};
  thread_local int next = 0;
  for (const seen_pointer& s : seen)
    if (s.ptr == ptr && s.device == device) return;
  cudaPointerAttributes at{};
  const cudaError_t e = cudaPointerGetAttributes(&at, ptr);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw error(std::string("argument '") + name + "' is not a CUDA pointer (" + cudaGetErrorString(e) + ")");
  }
  if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
    throw error(std::string("argument '") + name +
                "' points to host memory; the CUDA backend needs device (or managed) memory");
  if (at.type == cudaMemoryTypeDevice && at.device != device)
    throw error(std::string("argument '") + name + "' is memory of CUDA device " + std::to_string(at.device) +
                ", but the call runs on device " + std::to_string(device) +
                " (the current device: cudaSetDevice before the call, or move the tensor)");
  seen[next] = {ptr, device};
  next = (next + 1) % remembered;
}
template <class P>
void expect_device(const P* ptr, const char* name) {
  if (ptr != nullptr) expect_device(ptr, name, current_device());
}

// The kernel arguments of a validated call, without the index arrays (run() attaches those).
template <class T, class S>
kernel_args<T> make_kernel_args(const arguments<T, S>& a, const problem& p, int device = current_device()) {
  static_assert(std::is_same_v<S, float>, "the CUDA backend keeps states in float32");
  auto expect_device = [device](const auto* ptr, const char* name) { cuda_detail::expect_device(ptr, name, device); };
  expect_device(a.q.ptr, "q"), expect_device(a.k.ptr, "k"), expect_device(a.v.ptr, "v");
  expect_device(a.g.ptr, "g"), expect_device(a.gk.ptr, "gk"), expect_device(a.beta.ptr, "beta");
  expect_device(a.b.ptr, "b"), expect_device(a.w.ptr, "w");
  expect_device(a.gate.A_log.ptr, "gate.A_log"), expect_device(a.gate.dt_bias.ptr, "gate.dt_bias");
  expect_device(a.initial_state.ptr, "initial_state"), expect_device(a.final_state.ptr, "final_state");
  expect_device(a.o.ptr, "o"), expect_device(a.residual.ptr, "residual");
  expect_device(a.ccq.lambda.ptr, "ccq.lambda"), expect_device(a.ccq.log_decay.ptr, "ccq.log_decay");
  expect_device(a.ccq.C0.ptr, "ccq.C0"), expect_device(a.ccq.m0.ptr, "ccq.m0"), expect_device(a.ccq.z0.ptr, "ccq.z0");
  expect_device(a.ccq.C.ptr, "ccq.C"), expect_device(a.ccq.m.ptr, "ccq.m"), expect_device(a.ccq.z.ptr, "ccq.z");
  expect_device(a.ccq.q_tilde.ptr, "ccq.q_tilde");

  kernel_args<T> k;
  k.q = a.q, k.k = a.k, k.v = a.v, k.gk = a.gk, k.b = a.b, k.w = a.w, k.g = a.g, k.beta = a.beta;
  k.A_log = a.gate.A_log, k.dt_bias = a.gate.dt_bias;
  k.initial_state = a.initial_state;
  k.o = a.o, k.residual = a.residual, k.final_state = a.final_state;
  k.B = p.B, k.T = p.T, k.H = p.H, k.HV = p.HV, k.K = p.K, k.V = p.V, k.N = p.N, k.G = p.group;
  k.scale = static_cast<float>(p.scale);
  k.l2q = k.l2k = a.qk_l2norm;
  k.normalize = a.normalize;
  k.beta_act = static_cast<int>(a.beta_act);
  k.gate_active = a.gate.active();
  k.has_lower_bound = a.gate.lower_bound.has_value();
  k.lower_bound = a.gate.lower_bound ? *a.gate.lower_bound : 0.f;
  return k;
}

}  // namespace linea::cuda_detail
