// linea/backend/cuda/launch.hpp — host side: pick the kernel instantiation, size the launch, check it; and run
// a form with either read (the CCQ read is three launches: stats pass, cleaned queries, main pass).
#pragma once
#include "ccq_kernel.hpp"
#include "chunk_kernel.hpp"
#include "decode_kernel.hpp"
#include "delta_pipeline_kernel.hpp"
#include "recurrent_kernel.hpp"
#include "scalar_chunk_kernel.hpp"

#include <type_traits>

namespace linea::cuda_detail {

// The tile (operand) type for an input type: 16-bit inputs go to the tensor cores as themselves, float stays
// float (fp32 FMAs). linea's own storage types (core/storage.hpp) are the same bits as CUDA's.
template <class T>
struct operand_type {
  using type = T;
};
template <>
struct operand_type<bf16> {
  using type = __nv_bfloat16;
};
template <>
struct operand_type<fp16> {
  using type = __half;
};

template <class T>
inline constexpr bool supported_input =
    std::is_same_v<typename operand_type<T>::type, float> ||
    std::is_same_v<typename operand_type<T>::type, __nv_bfloat16> || std::is_same_v<typename operand_type<T>::type, __half>;

// ---- token-by-token kernel (recurrent form, decode step) -----------------------------------------------------
template <class Rule, class T, pass P, int KMAX>
void launch_recurrent_k(const kernel_args<T>& k, index_t rows) {
  const index_t cols = P == pass::stats ? k.K : k.V;
  const dim3 grid(static_cast<unsigned>((cols + recurrent_threads - 1) / recurrent_threads),
                  static_cast<unsigned>(k.HV), static_cast<unsigned>(rows));
  recurrent_kernel<Rule, T, P, KMAX><<<grid, recurrent_threads>>>(k);
  check_launch("recurrent_kernel");
}

template <class Rule, class T, pass P>
void launch_recurrent(const kernel_args<T>& k, index_t rows) {
  if (rows == 0 || k.HV == 0) return;
  if (k.K <= 32) launch_recurrent_k<Rule, T, P, 32>(k, rows);
  else if (k.K <= 64) launch_recurrent_k<Rule, T, P, 64>(k, rows);
  else if (k.K <= 128) launch_recurrent_k<Rule, T, P, 128>(k, rows);
  else if (k.K <= 256) launch_recurrent_k<Rule, T, P, 256>(k, rows);
  else throw error("the CUDA recurrent form and decode step support K <= 256, but K = " + std::to_string(k.K));
}

// ---- decode step (main pass, K <= 128); the stats pass and larger K use the token-by-token kernel -----------------
// Four columns per lane (16-byte loads): closer to copy bandwidth on the H200 than two (bench/cuda/README.md).
template <class Rule, class T, int KMAX>
void launch_decode_k(const kernel_args<T>& k, index_t rows) {
  constexpr int CPL = 4, cols = 32 * CPL;
  const dim3 grid(static_cast<unsigned>((k.V + cols - 1) / cols), static_cast<unsigned>(k.HV), static_cast<unsigned>(rows));
  decode_kernel<Rule, T, KMAX, CPL><<<grid, decode_threads>>>(k);
  check_launch("decode_kernel");
}

template <class Rule, class T, pass P>
void launch_step(const kernel_args<T>& k, index_t rows) {
  if (rows == 0 || k.HV == 0) return;
  if constexpr (P == pass::main) {
    if (k.K <= 32) return launch_decode_k<Rule, T, 32>(k, rows);
    if (k.K <= 64) return launch_decode_k<Rule, T, 64>(k, rows);
    if (k.K <= 128) return launch_decode_k<Rule, T, 128>(k, rows);
  }
  launch_recurrent<Rule, T, P>(k, rows);
}

// Lets Kernel use Bytes of dynamic shared memory (past the 48 KB default): once per kernel and process, the call
// is not free and the size is fixed at compile time.
template <auto Kernel, std::size_t Bytes>
void allow_dynamic_shared() {
  static const bool done = [] {
    LINEA_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Bytes)));
    return true;
  }();
  (void)done;
}

// ---- chunk kernels: the 64-token ones of the scalar-decay rules when their inputs allow, else the general one --------
// additive / simple_gla: one CTA per (head, sequence, 64 value columns); delta / gated_delta: one warp-specialised
// CTA per (head, sequence) holding all value columns (V <= 128 here).
template <class Rule, class T, class E>
void launch_chunk64(const kernel_args<T>& k, index_t rows) {
  if constexpr (delta_chunk_rule<Rule, pass::main>) {
    using sh = delta_pipeline_shape;
    constexpr auto kernel = delta_pipeline_kernel<Rule, T, E>;
    allow_dynamic_shared<kernel, sh::bytes>();
    const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((k.V + sh::BVW - 1) / sh::BVW));
    kernel<<<grid, sh::threads, sh::bytes>>>(k);
    check_launch("delta_pipeline_kernel");
  } else {
    using sh = scalar_chunk_shape;
    constexpr auto kernel = scalar_chunk_kernel<Rule, T, E>;
    allow_dynamic_shared<kernel, sh::bytes>();
    const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((k.V + sh::BV - 1) / sh::BV));
    kernel<<<grid, tiles::threads, sh::bytes>>>(k);
    check_launch("scalar_chunk_kernel");
  }
}

// ---- chunk kernel -----------------------------------------------------------------------------------------------
template <class Rule, class T, pass P>
void launch_chunk(const kernel_args<T>& k, index_t rows) {
  if (rows == 0 || k.HV == 0) return;
  if (k.K > chunk_kp || k.V > chunk_vp)
    throw error("the CUDA chunkwise form supports K, V <= 128, but K = " + std::to_string(k.K) +
                ", V = " + std::to_string(k.V) + " (use the recurrent form)");
  using E = typename operand_type<T>::type;  // bf16 / fp16 on tensor cores, float in fp32 FMAs
  if constexpr ((scalar_chunk_rule<Rule, P> || delta_chunk_rule<Rule, P>) && sizeof(T) == 2) {
    if (tiles::inputs_fit(k)) return launch_chunk64<Rule, T, E>(k, rows);  // the 64-token kernels
  }
  constexpr int BV = chunk_bv<Rule, T, E, P>;
  constexpr std::size_t bytes = chunk_shape<Rule, T, E, P, BV>::bytes;
  constexpr auto kernel = chunk_kernel<Rule, T, E, P, BV>;
  allow_dynamic_shared<kernel, bytes>();
  const index_t cols = P == pass::stats ? k.K : k.V;
  const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((cols + BV - 1) / BV));
  kernel<<<grid, chunk_threads, bytes>>>(k);
  check_launch("chunk_kernel");
}

// ---- a form with its read ------------------------------------------------------------------------------------------
enum class form { recurrent, step, chunkwise };

template <class Rule, form F, pass P, class T>
void launch_form(const kernel_args<T>& k, index_t rows) {
  if constexpr (F == form::chunkwise) launch_chunk<Rule, T, P>(k, rows);
  else if constexpr (F == form::step) launch_step<Rule, T, P>(k, rows);
  else launch_recurrent<Rule, T, P>(k, rows);
}

template <class Rule, class Read, form F, class T>
void run(const arguments<T, float>& a, const problem& p) {
  static_assert(supported_input<T>, "the CUDA backend takes float, __nv_bfloat16 or __half inputs");
  static_assert(std::is_same_v<Read, read::identity> || read::is_ccq<Read>,
                "linea: the CUDA backend has kernels for the identity and CCQ reads only, not this read policy");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is not produced by the CUDA backend");
  host_copies hold;
  const kernel_args<T> k = make_kernel_args(a, p, hold);
  const index_t rows = F == form::step ? p.B : p.N;  // blocks over batch rows (step) or sequences

  if constexpr (Read::is_identity) {
    launch_form<Rule, F, pass::main>(k, rows);
  } else {
    if (a.normalize) throw error("argument 'normalize' is not supported with the CCQ read on the CUDA backend");
    if (p.K > 2 * ccq_threads) throw error("the CUDA CCQ read supports K <= 512, but K = " + std::to_string(p.K));
    const std::size_t n = static_cast<std::size_t>(p.B * p.T * p.HV * p.K);
    device_buffer<float> y(n), qt(n);
    // 1. stats pass: Y_t = C_t q̂_t, C_t = a_t C_{t-1} + k̂_t k̂_tᵀ (values := keys, decay c_t)
    kernel_args<T> s = k;
    s.o = {}, s.residual = {}, s.initial_state = {}, s.final_state = {};
    s.y = contiguous<4>(y.get(), {p.B, p.T, p.HV, p.K});
    s.C0 = a.ccq.C0, s.C = a.ccq.C, s.ccq_log_decay = a.ccq.log_decay;
    s.ccq_decays = Read::weighting::decays;
    launch_form<Rule, F, pass::stats>(s, rows);
    // 2. q̃_t from Y_t, m_t, z_t
    ccq_args<T> c{s, a.ccq.lambda, a.ccq.m0, a.ccq.z0, a.ccq.m, a.ccq.z, a.ccq.q_tilde,
                  contiguous<4>(qt.get(), {p.B, p.T, p.HV, p.K})};
    const std::size_t bytes = sizeof(float) * 3 * ccq_tile * static_cast<std::size_t>(p.K);
    if (rows > 0) {
      LINEA_CUDA_CHECK(cudaFuncSetAttribute(ccq_query_kernel<Rule, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(bytes)));
      ccq_query_kernel<Rule, T><<<dim3(static_cast<unsigned>(p.HV), static_cast<unsigned>(rows)), ccq_threads, bytes>>>(c);
      check_launch("ccq_query_kernel");
    }
    // 3. main pass, reading with q̃
    kernel_args<T> m = k;
    m.q_tilde_in = c.q_tilde;
    launch_form<Rule, F, pass::main>(m, rows);
  }
}

}  // namespace linea::cuda_detail
