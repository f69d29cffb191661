// linea/backend/cuda/launch.hpp — host side: pick the kernel instantiation, size the launch, check it; and run
// a form with either read (the CCQ read is three launches: stats pass, cleaned queries, main pass). Every launch
// goes on the call's stream (cuda::launch); nothing here waits for the device.
#pragma once
#include "ccq_kernel.hpp"
#include "chunk_kernel.hpp"
#include "decode_kernel.hpp"
#include "delta_pipeline_kernel.hpp"
#include "index_check.hpp"
#include "kernel_attributes.hpp"
#include "launch_options.hpp"
#include "perkey_chunk_kernel.hpp"
#include "perkey_delta_kernel.hpp"
#include "recurrent_kernel.hpp"
#include "scalar_chunk_kernel.hpp"
#include "workspace.hpp"

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

// Where a call's launches go: its stream, on the current device (per-device state: kernel_attributes.hpp).
struct exec {
  cudaStream_t stream = nullptr;
  int device = 0;
};

// ---- token-by-token kernel (recurrent form, decode step) -----------------------------------------------------
template <class Rule, class T, pass P, int KMAX>
void launch_recurrent_k(const kernel_args<T>& k, index_t rows, const exec& x) {
  const index_t cols = P == pass::stats ? k.K : k.V;
  const dim3 grid(static_cast<unsigned>((cols + recurrent_threads - 1) / recurrent_threads),
                  static_cast<unsigned>(k.HV), static_cast<unsigned>(rows));
  recurrent_kernel<Rule, T, P, KMAX><<<grid, recurrent_threads, 0, x.stream>>>(k);
  check_launch("recurrent_kernel");
}

template <class Rule, class T, pass P>
void launch_recurrent(const kernel_args<T>& k, index_t rows, const exec& x) {
  if (rows == 0 || k.HV == 0) return;
  if (k.K <= 32) launch_recurrent_k<Rule, T, P, 32>(k, rows, x);
  else if (k.K <= 64) launch_recurrent_k<Rule, T, P, 64>(k, rows, x);
  else if (k.K <= 128) launch_recurrent_k<Rule, T, P, 128>(k, rows, x);
  else if (k.K <= 256) launch_recurrent_k<Rule, T, P, 256>(k, rows, x);
  else throw error("the CUDA recurrent form and decode step support K <= 256, but K = " + std::to_string(k.K));
}

// ---- decode step (main pass, K <= 128); the stats pass and larger K use the token-by-token kernel -----------------
// Four columns per lane (16-byte loads): closer to copy bandwidth on the H200 than two (bench/cuda/README.md).
// (CPL, NW, Lean, MinBlocks, Walk: columns per lane, warps per block, key vectors by shuffles, blocks per SM, which
// batch row a block serves; bench_cuda.cu --decode-variants measures the library's choice, decode_ab.cu the walks.)
// MinBlocks = 3 for the library's shape: the 128-thread block with its 32×4 state registers fits three to an SM only
// at <= 168 registers, which ptxas does not aim for by itself (184 without the bound: two blocks, ~14% slower;
// bench/cuda/README.md, 2026-12-02). Other shapes: no bound unless asked. Walk = pool (decode_order.hpp): through a
// permuted pool the blocks walk it in address order, 0.6–1.8 % faster for every rule on the H200; a batch already in
// order or spread over a pool over twice its size pays ~1 % for finding that out (bench/cuda/README.md, dec6).
template <class Rule, class T, int KMAX, int CPL = 4, int NW = decode_threads / 32, bool Lean = false,
          int MinBlocks = (CPL == 4 && NW == 4 ? 3 : 1), decode_walk Walk = decode_walk::pool>
void launch_decode_k(const kernel_args<T>& k, index_t rows, const exec& x) {
  constexpr int cols = 32 * CPL;
  const dim3 grid(static_cast<unsigned>((k.V + cols - 1) / cols), static_cast<unsigned>(k.HV), static_cast<unsigned>(rows));
  decode_kernel<Rule, T, KMAX, CPL, NW, Lean, MinBlocks, Walk><<<grid, 32 * NW, 0, x.stream>>>(k);
  check_launch("decode_kernel");
}

template <class Rule, class T, pass P>
void launch_step(const kernel_args<T>& k, index_t rows, const exec& x) {
  if (rows == 0 || k.HV == 0) return;
  if constexpr (P == pass::main) {
    if (k.K <= 32) return launch_decode_k<Rule, T, 32>(k, rows, x);
    if (k.K <= 64) return launch_decode_k<Rule, T, 64>(k, rows, x);
    if (k.K <= 128) return launch_decode_k<Rule, T, 128>(k, rows, x);
  }
  launch_recurrent<Rule, T, P>(k, rows, x);
}

// ---- chunk kernels: the 64-token ones when their inputs allow, else the general one ------------------------------
// additive / simple_gla: one CTA per (head, sequence, 64 value columns); delta / gated_delta: one warp-specialised
// CTA per (head, sequence) holding all value columns (V <= 128 here); gla: one warp-specialised CTA per (head,
// sequence) on 32-token chunks (perkey_delta_kernel.hpp), and since pk18-next kda and gdn2 too (after pko 0.78 /
// 0.85 ms against the general kernel's 1.61 / 1.66 at 8×4096 under ordinary gates; 1.79 / 1.84 against 1.61 / 1.66
// under SPEC's extreme gates; bench/cuda/README.md pk18, pk19 measured, pko).
// How the per-key kernel stores its o and residual strips (pko, issue #15): in full 32-byte sectors (a quad's pairs
// traded by shuffles, 16 bytes a lane) rather than the accumulators' 4-byte pairs, which filled half a sector a
// store. pko's call (H200, 8×4096 bf16, linea::chunkwise, medians of 9): kda 0.798 → 0.782 ms, gdn2 0.870 → 0.855,
// gla 0.518 → 0.491, bit-identical; the kernel's global store instructions 1.11 M → 0.33 M, L2 write sectors
// 13.1 M → 7.1 M, DRAM writes unchanged (L2 had merged the halves). Built with LINEA_PERKEY_PAIR_STORES, the
// library keeps the pairs (the A/B's library rows).
#ifdef LINEA_PERKEY_PAIR_STORES
inline constexpr auto perkey_strip_store = tiles::strip_store::pairs;
#else
inline constexpr auto perkey_strip_store = tiles::strip_store::sectors;
#endif
// The scalar kernel's (linear_attn, simple_gla; pass C of their segmented forward) and the delta kernel's (delta,
// gated_delta: o and the residual) strips (pko2, issue #15): in full sectors too. pko2's call (H200, bf16, H = 16,
// K = V = 128, linea::chunkwise, old and new interleaved in one process, medians of 18 rounds over two processes):
// 8×4096 linear_attn 0.318 → 0.300 ms, simple_gla 0.351 → 0.334, delta 0.393 → 0.371, gated_delta 0.488 → 0.466;
// 1×32768 (pieces of 4096) 0.492 → 0.474, 0.563 → 0.549, 1.103 → 1.077, 1.388 → 1.365; bit-identical (46 / 46
// cases of bench/cuda/sectors_ab.cu --check, whole poisoned buffers).
inline constexpr auto scalar_strip_store = tiles::strip_store::sectors;
inline constexpr auto delta_strip_store = tiles::strip_store::sectors;
#ifdef LINEA_STRIP_STORE_AB
#ifdef LINEA_CUDA_EXTERN_INSTANCES
#error "LINEA_STRIP_STORE_AB switches the launches of this unit only: build it without the extern instances"
#endif
// A/B builds only (bench/cuda/sectors_ab.cu, one unit instantiating what it calls): true sends the scalar and the
// delta kernels' strips back to pairs, at run time, so that old and new run in one process through the library's
// own path. The per-key kernel keeps perkey_strip_store either way.
inline bool strip_store_ab_pairs = false;
#endif
template <class Rule, class T, class E, tiles::strip_store Scalar = scalar_strip_store,
          tiles::strip_store Delta = delta_strip_store>
void launch_chunk64_stores(const kernel_args<T>& k, index_t rows, const exec& x) {
  if constexpr (perkey_pipeline_rule<Rule, pass::main>) {
    // gla, kda, gdn2: the warp-specialised per-key kernel (gla 0.526 ms at 8×4096 on the H200 against
    // perkey_chunk_kernel.hpp's 1.490 and main 5386113's version of this kernel 1.048 in the same process; 0.491
    // since pko's stores), with
    // DerivedFactors (two exponentials a row in ordinary chunks; pk19's call, the kernel alone at 8×4096: kda 0.812 →
    // 0.791 ms, gdn2 0.873 → 0.861, gla 0.525 → 0.513; o within 2.8e-5 of the four-exponential form, both within
    // SPEC §5 of float64 on every case of perkey_delta_ab --check)
    using sh = perkey_delta_shape;
    constexpr auto kernel = perkey_delta_kernel<Rule, T, E, true, perkey_strip_store>;
    allow_dynamic_shared<kernel>(sh::bytes, x.device);
    const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((k.V + sh::BVW - 1) / sh::BVW));
    kernel<<<grid, sh::threads, sh::bytes, x.stream>>>(k);
    check_launch("perkey_delta_kernel");
  } else if constexpr (delta_chunk_rule<Rule, pass::main>) {
    // states only (the segmented forward's passes A and M): the instantiation without the query side
    using sh = delta_pipeline_shape;
    constexpr auto kernel = delta_pipeline_kernel<Rule, T, E, true, Delta>;
    constexpr auto states_kernel = delta_pipeline_kernel<Rule, T, E, false>;  // (no strips)
    const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((k.V + sh::BVW - 1) / sh::BVW));
    if (k.states_only) {
      allow_dynamic_shared<states_kernel>(sh::bytes, x.device);
      states_kernel<<<grid, sh::threads, sh::bytes, x.stream>>>(k);
    } else {
      allow_dynamic_shared<kernel>(sh::bytes, x.device);
      kernel<<<grid, sh::threads, sh::bytes, x.stream>>>(k);
    }
    check_launch("delta_pipeline_kernel");
  } else {
    using sh = scalar_chunk_shape;
    constexpr auto kernel = scalar_chunk_kernel<Rule, T, E, Scalar>;
    allow_dynamic_shared<kernel>(sh::bytes, x.device);
    const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((k.V + sh::BV - 1) / sh::BV));
    kernel<<<grid, tiles::threads, sh::bytes, x.stream>>>(k);
    check_launch("scalar_chunk_kernel");
  }
}
template <class Rule, class T, class E>
void launch_chunk64(const kernel_args<T>& k, index_t rows, const exec& x) {
#ifdef LINEA_STRIP_STORE_AB
  using tiles::strip_store;
  if (strip_store_ab_pairs) return launch_chunk64_stores<Rule, T, E, strip_store::pairs, strip_store::pairs>(k, rows, x);
#endif
  launch_chunk64_stores<Rule, T, E>(k, rows, x);
}

// ---- chunk kernel -----------------------------------------------------------------------------------------------
template <class Rule, class T, pass P>
void launch_chunk(const kernel_args<T>& k, index_t rows, const exec& x) {
  if (rows == 0 || k.HV == 0) return;
  if (k.K > chunk_kp || k.V > chunk_vp)
    throw error("the CUDA chunkwise form supports K, V <= 128, but K = " + std::to_string(k.K) +
                ", V = " + std::to_string(k.V) + " (use the recurrent form)");
  using E = typename operand_type<T>::type;  // bf16 / fp16 on tensor cores, float in fp32 FMAs
  if constexpr ((scalar_chunk_rule<Rule, P> || delta_chunk_rule<Rule, P> || perkey_pipeline_rule<Rule, P>) && sizeof(T) == 2) {
    if (tiles::inputs_fit(k)) return launch_chunk64<Rule, T, E>(k, rows, x);  // the 64-token kernels
  }
  constexpr int BV = chunk_bv<Rule, T, E, P>;
  constexpr std::size_t bytes = chunk_shape<Rule, T, E, P, BV>::bytes;
  constexpr auto kernel = chunk_kernel<Rule, T, E, P, BV>;
  allow_dynamic_shared<kernel>(bytes, x.device);
  const index_t cols = P == pass::stats ? k.K : k.V;
  const dim3 grid(static_cast<unsigned>(k.HV), static_cast<unsigned>(rows), static_cast<unsigned>((cols + BV - 1) / BV));
  kernel<<<grid, chunk_threads, bytes, x.stream>>>(k);
  check_launch("chunk_kernel");
}

// ---- a form with its read ------------------------------------------------------------------------------------------
enum class form { recurrent, step, chunkwise };

template <class Rule, form F, pass P, class T>
void launch_form(const kernel_args<T>& k, index_t rows, const exec& x) {
  if constexpr (F == form::chunkwise) launch_chunk<Rule, T, P>(k, rows, x);
  else if constexpr (F == form::step) launch_step<Rule, T, P>(k, rows, x);
  else launch_recurrent<Rule, T, P>(k, rows, x);
}

}  // namespace linea::cuda_detail
