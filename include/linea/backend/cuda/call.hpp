// linea/backend/cuda/call.hpp — one call of a CUDA form, after the host validated its arguments: device pointers
// checked, workspace found (the caller's or the cached one), index arrays attached (device-side ones as given,
// host spans copied into the workspace), optionally the device-side indices checked, then the launches.
//
// Everything is enqueued on cuda::launch::stream; the only wait for the device is cuda::launch::check_indices.
#pragma once
#include "ccq_chunked.hpp"
#include "launch.hpp"

namespace linea::cuda_detail {

// The index arrays of the kernels: the caller's device arrays, or the host spans copied (asynchronously, on the
// call's stream) into the workspace.
template <class T, class S>
void attach_indices(kernel_args<T>& k, const arguments<T, S>& a, const cuda::launch& l, const workspace_layout& w,
                    const call_workspace& ws) {
  if (!l.cu_seqlens.empty()) {
    if (l.cu_seqlens.wide) k.cu_seqlens = static_cast<const std::int64_t*>(l.cu_seqlens.data);
    else k.cu_seqlens32 = static_cast<const std::int32_t*>(l.cu_seqlens.data);
  } else if (!a.cu_seqlens.empty()) {
    // Copied at its own width (int32 or int64, core/seqlens.hpp); the workspace holds room for int64.
    const auto bytes = a.cu_seqlens.bytes();
    void* d = ws.template at<std::int64_t>(w.cu_seqlens);
    LINEA_CUDA_CHECK(cudaMemcpyAsync(d, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, l.stream));
    if (a.cu_seqlens.is_int32()) k.cu_seqlens32 = static_cast<const std::int32_t*>(d);
    else k.cu_seqlens = static_cast<const std::int64_t*>(d);
  }
  if (!l.state_indices.empty()) {
    k.state_indices = l.state_indices.data;
  } else if (!a.state_indices.empty()) {
    auto* d = ws.template at<std::int32_t>(w.state_indices);
    LINEA_CUDA_CHECK(
        cudaMemcpyAsync(d, a.state_indices.data(), a.state_indices.size_bytes(), cudaMemcpyHostToDevice, l.stream));
    k.state_indices = d;
  }
}

template <class T, class S>
bool writes_state_back(const arguments<T, S>& a) {
  return !a.final_state.empty() || !a.ccq.C.empty() || !a.ccq.m.empty() || !a.ccq.z.empty();
}

// states_only: the call's o (and residual) may be left unwritten (kernel_args::states_only; the identity read's
// chunkwise form only).
template <class Rule, class Read, form F, class T>
void run(const arguments<T, float>& a, const problem& p, const cuda::launch& l, bool states_only = false) {
  static_assert(supported_input<T>, "the CUDA backend takes float, __nv_bfloat16 or __half inputs");
  static_assert(std::is_same_v<Read, read::identity> || read::is_ccq<Read>,
                "linea: the CUDA backend has kernels for the identity and CCQ reads only, not this read policy");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is not produced by the CUDA backend");
  if constexpr (!Read::is_identity) {
    if (a.normalize) throw error("argument 'normalize' is not supported with the CCQ read on the CUDA backend");
    if (p.K > 2 * ccq_threads) throw error("the CUDA CCQ read supports K <= 512, but K = " + std::to_string(p.K));
  }
  const exec x{l.stream, current_device()};
  kernel_args<T> k = make_kernel_args(a, p, x.device);  // every pointer on x.device
  expect_device(l.cu_seqlens.data, "cuda::launch::cu_seqlens", x.device);
  expect_device(l.state_indices.data, "cuda::launch::state_indices", x.device);
  linea::detail::expect_aligned_indices(l.cu_seqlens.data, l.cu_seqlens.size, l.cu_seqlens.wide ? 8 : 4, "cuda::launch::cu_seqlens");
  linea::detail::expect_aligned_indices(l.state_indices.data, l.state_indices.size, sizeof(std::int32_t), "cuda::launch::state_indices");
  const workspace_layout w = plan_workspace<Read>(a, l);
  expect_workspace_apart(l, w.bytes, a);
  const call_workspace ws(w, l, x.device);  // throws when the caller's is too small
  attach_indices(k, a, l, w, ws);
  if (w.error_word != workspace_layout::npos)
    check_device_indices(l, p.B, p.T, p.N, writes_state_back(a), ws.template at<int>(w.error_word), l.stream);
  const index_t rows = F == form::step ? p.B : p.N;  // blocks over batch rows (step) or sequences
  k.states_only = states_only && Read::is_identity && F == form::chunkwise && !a.normalize;

  if constexpr (Read::is_identity) {
    launch_form<Rule, F, pass::main>(k, rows, x);
  } else {
    // chunkwise, 16-bit inputs: chunk-parallel statistics and both passes on the 64-token kernels (ccq_chunked.hpp)
    if constexpr (F == form::chunkwise)
      if (run_ccq_chunked<Rule>(a, p, k, rows, w, ws, x, Read::weighting::decays)) return;
    // 1. stats pass: Y_t = C_t q̂_t, C_t = a_t C_{t-1} + k̂_t k̂_tᵀ (values := keys, decay c_t)
    kernel_args<T> s = k;
    s.o = {}, s.residual = {}, s.initial_state = {}, s.final_state = {};
    s.y = contiguous<4>(ws.template at<float>(w.ccq_y), {p.B, p.T, p.HV, p.K});
    s.C0 = a.ccq.C0, s.C = a.ccq.C, s.ccq_log_decay = a.ccq.log_decay;
    s.ccq_decays = Read::weighting::decays;
    launch_form<Rule, F, pass::stats>(s, rows, x);
    // 2. q̃_t from Y_t, m_t, z_t
    ccq_args<T> c{s, a.ccq.lambda, a.ccq.m0, a.ccq.z0, a.ccq.m, a.ccq.z, a.ccq.q_tilde,
                  contiguous<4>(ws.template at<float>(w.ccq_q), {p.B, p.T, p.HV, p.K})};
    const std::size_t bytes = sizeof(float) * 3 * ccq_tile * static_cast<std::size_t>(p.K);
    if (rows > 0) {
      allow_dynamic_shared<ccq_query_kernel<Rule, T>>(bytes, x.device);
      ccq_query_kernel<Rule, T>
          <<<dim3(static_cast<unsigned>(p.HV), static_cast<unsigned>(rows)), ccq_threads, bytes, x.stream>>>(c);
      check_launch("ccq_query_kernel");
    }
    // 3. main pass, reading with q̃
    kernel_args<T> m = k;
    m.q_tilde_in = c.q_tilde;
    launch_form<Rule, F, pass::main>(m, rows, x);
  }
}

// On the default stream with the cached workspace.
template <class Rule, class Read, form F, class T>
void run(const arguments<T, float>& a, const problem& p) {
  run<Rule, Read, F>(a, p, cuda::launch{});
}

}  // namespace linea::cuda_detail
