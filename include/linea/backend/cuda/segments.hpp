// linea/backend/cuda/segments.hpp — intra-sequence parallelism on one GPU, and context parallelism over GPUs, for
// the CUDA chunkwise form. The chunk kernels run one CTA per (sequence, value head, value tile): one long sequence
// gives 16–32 CTAs for 132 SMs. The chunkwise form then cuts long sequences into pieces run in parallel and combines
// their states exactly (segments/plan.hpp), choosing the piece length from the shape and the device's SM count:
//
//   linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args, l);   // cut when it pays
//   l.segment_tokens = 0;      // never cut;   l.segment_tokens = 2048: pieces of 2048 tokens
//
// Scratch (states per piece, transitions, the pieces' index arrays) is carved from the call's workspace — the
// caller's launch::workspace or the one linea keeps per (device, stream) — and counted in cuda::workspace_size;
// index arrays travel as kernel parameters. Nothing waits for the device. Context parallelism carves its scratch
// (the rank's summaries, the gathered ones, the pieces' states) the same way, counted by
// cuda::context_parallel_workspace_size: nothing is allocated per call.
#pragma once
#include "alignment.hpp"
#include "call.hpp"
#include "decay_product_kernel.hpp"
#include "piece_state_kernel.hpp"
#include "segment_kernels.hpp"
#include "staged_combine_kernel.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "../../forms/chunkwise.hpp"
#include "../../segments/context_parallel.hpp"
#include "../../segments/forward.hpp"

namespace linea::cuda_detail {

template <class Rule, class Read, class T>
bool run_segmented(const arguments<T, float>& a, const problem& p, const cuda::launch& l);

// Where device_ops takes its scratch from: allocated stream-ordered and freed with the object; carved from one
// buffer (the segmented forward's and context parallelism's workspace); or only counted — nothing allocated,
// written or launched — which sizes that buffer by running the same code (segment_scratch_bytes,
// context_parallel_scratch_bytes).
enum class scratch_source { allocate, carve, count };

// The segmented forward's and context parallelism's operations on the device, on one stream (host_ops.hpp has the
// same on the host).
class device_ops {
 public:
  explicit device_ops(cudaStream_t s, std::int64_t segment_tokens = -1) : stream_(s), segment_tokens_(segment_tokens) {}
  // Scratch carved from [base, base + bytes) (16-byte aligned), or (base null, count) only counted. Its chunkwise
  // passes are never cut again, and the workspace each needs (a host cu_seqlens' device copy) is carved here too:
  // no pass takes the cached workspace that this call may hold. `segment_tokens` steers only piece_for (context
  // parallelism's cut of a long shard).
  device_ops(cudaStream_t s, scratch_source src, void* base, std::size_t bytes, std::int64_t segment_tokens = 0)
      : stream_(s), segment_tokens_(segment_tokens), source_(src), base_(static_cast<unsigned char*>(base)),
        capacity_(bytes) {}
  device_ops(const device_ops&) = delete;
  device_ops& operator=(const device_ops&) = delete;
  ~device_ops() {
    for (void* p : owned_) (void)cudaFreeAsync(p, stream_);
  }
  cudaStream_t stream() const { return stream_; }
  std::size_t carved_bytes() const { return used_; }  // carve / count: the bytes taken so far

  template <class X>
  X* alloc(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(X);
    if (source_ == scratch_source::allocate) {
      void* p = nullptr;
      LINEA_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
      owned_.push_back(p);
      return static_cast<X*>(p);
    }
    const std::size_t at = used_;
    used_ += part_align(bytes);  // every part part_bytes aligned, as in workspace_layout
    if (source_ == scratch_source::count) return nullptr;
    if (used_ > capacity_)  // segment_scratch_bytes sized it by this same code: a bug if reached
      throw error("linea: the segmented forward's scratch outgrew its workspace (" + std::to_string(used_) + " > " +
                  std::to_string(capacity_) + " bytes)");
    return reinterpret_cast<X*>(base_ + at);
  }
  template <class X>
  X* zeros(std::size_t n) {
    X* p = alloc<X>(n);
    if (!counting()) LINEA_CUDA_CHECK(cudaMemsetAsync(p, 0, std::max<std::size_t>(n, 1) * sizeof(X), stream_));
    return p;
  }

  // A device copy of host values, written by kernels that carry them as parameters.
  template <class X>
  const X* upload(std::span<const X> host) {
    X* d = alloc<X>(host.size());
    if (counting()) return d;
    parameter_block<X> block;
    for (std::size_t at = 0; at < host.size(); at += parameter_block<X>::capacity) {
      block.count = static_cast<int>(std::min<std::size_t>(parameter_block<X>::capacity, host.size() - at));
      std::copy(host.begin() + at, host.begin() + at + block.count, block.values);
      write_block_kernel<X><<<1, 256, 0, stream_>>>(d + at, block);
      check_launch("write_block_kernel");
    }
    return d;
  }

  // The chunkwise form over `a` with `cu` (host values) as its packed sequences, or `a`'s own when empty — then
  // cut again when that pays (a context-parallel rank's long shard). states_only: a's o may be left unwritten (the
  // segmented passes A and M, segments::states_only_passes; kernel_args::states_only).
  static constexpr bool states_only_passes = true;
  template <class Rule, class T>
  void forward(arguments<T, float> a, std::span<const std::int64_t> cu, bool states_only = false) {
    cuda::launch l{.stream = stream_};
    l.segment_tokens = source_ == scratch_source::allocate ? segment_tokens_ : 0;
    if (!cu.empty()) {
      l.cu_seqlens = cuda::device_seqlens(upload(cu), cu.size());
      l.segment_tokens = 0;
    }
    if (source_ != scratch_source::allocate) {  // the pass's own workspace, from this scratch
      const std::size_t bytes = plan_workspace<read::identity>(a, l).bytes;
      if (bytes) l.workspace = alloc<unsigned char>(bytes), l.workspace_bytes = bytes;
    }
    if (counting()) return;
    const index_t on_device = cu.empty() ? -1 : static_cast<index_t>(cu.size()) - 1;
    const problem p = validate_chunkwise<Rule, read::identity>(a, on_device);
    if (cu.empty() && run_segmented<Rule, read::identity>(a, p, l)) return;
    run<Rule, read::identity, form::chunkwise>(a, p, l, states_only);
  }

  // The piece length a context-parallel rank cuts its shard into (0: not cut).
  template <class Rule, class T>
  index_t piece_for(const arguments<T, float>& a, const std::vector<std::int64_t>& starts, const problem& p) const;

  // Pass M of a rule whose transition is a decay alone (segments::diagonal_transition): M [N, HV, K, 1] ← the product
  // of the decays over each sequence of `x` (cu's, or x's own), from their summed logs (decay_product_kernel.hpp):
  // one small launch that reads the gates, where the general path runs the chunk kernel with V = 1.
  static constexpr bool sums_log_decays = true;
  template <class Rule, class T>
  void decay_transitions(const arguments<T, float>& x, const view<float, 4>& M, std::span<const std::int64_t> cu) {
    static_assert(decay_product_rule<Rule>, "decay_transitions: a rule with a scalar or per-key decay");
    std::vector<std::int64_t> own;  // x's own host cu_seqlens (a context-parallel shard): copied like cu
    if (cu.empty() && !x.cu_seqlens.empty()) own = x.cu_seqlens.to_int64(), cu = own;
    const std::int64_t* seqlens = cu.empty() ? nullptr : upload(cu);
    if (counting()) return;
    arguments<T, float> y = x;
    y.cu_seqlens = {}, y.initial_state = {}, y.final_state = {}, y.residual = {};
    const problem p = validate_chunkwise<Rule, read::identity>(y, seqlens ? static_cast<index_t>(cu.size()) - 1 : -1);
    if (M.ext[0] != p.N || M.ext[1] != p.HV || M.ext[2] != p.K || M.ext[3] != 1)  // forward.hpp sized it: a bug if met
      throw error("linea: the segmented forward's decay transitions [" + std::to_string(M.ext[0]) + ", " +
                  std::to_string(M.ext[1]) + ", " + std::to_string(M.ext[2]) + ", " + std::to_string(M.ext[3]) +
                  "] do not match " + std::to_string(p.N) + " sequences, " + std::to_string(p.HV) + " heads, K = " +
                  std::to_string(p.K));
    if (p.N == 0 || p.HV == 0 || p.K == 0) return;
    kernel_args<T> k = make_kernel_args(y, p);
    k.cu_seqlens = seqlens;
    const dim3 grid(static_cast<unsigned>(p.N), static_cast<unsigned>(p.HV), decay_product_key_blocks<Rule>(p.K));
    decay_product_kernel<Rule, T><<<grid, decay_product_shape::threads, 0, stream_>>>(k, M);
    check_launch("decay_product_kernel");
  }

  // Pass A of a rule that only adds (segments::reduces_states; piece_state_kernel.hpp): the final states from zero of
  // the pieces of `x` cut at `cu` (host offsets from x's first token) into x.final_state [pieces, HV, K, V] — a
  // reduction over slabs of the pieces, k and v read once, no output. With `M` [pieces, HV, K, 1] (contiguous; a rule
  // with a decay) also pass M, the pieces' diagonal transitions 2^(Σ clamped log₂ α), from the slabs' sums the kernels
  // compute anyway (no launch of decay_transitions, no second read of the gates). False, with nothing carved or
  // launched, where the kernel does not read these inputs (not 16-bit, rows not 16-byte aligned, K > 128): the caller
  // runs the chunk kernel (and its own pass M). The same answer and the same scratch whether counting or carving.
  static constexpr bool reduces_piece_states = true;
  template <class Rule, class T>
  bool piece_states(const arguments<T, float>& x, std::span<const std::int64_t> cu, const view<float, 4>& M = {}) {
    if constexpr (!piece_state_rule<Rule> || sizeof(T) != 2) {
      return false;
    } else {
      constexpr bool decays = Rule::decay::kind != decay_kind::none;
      const index_t pieces = static_cast<index_t>(cu.size()) - 1;
      if (pieces < 1 || x.k.ext[3] > tiles::KP || !tiles::rows_fit_cp_async(x.k) || !tiles::rows_fit_cp_async(x.v) ||
          !x.cu_seqlens.empty())
        return false;
      if (!M.empty() && (!decays || M.ext[0] != pieces || M.ext[1] != x.v.ext[2] || M.ext[2] != x.k.ext[3] ||
                         M.ext[3] != 1 || M.str[2] != 1 || M.str[1] != M.ext[2] || M.str[0] != M.ext[1] * M.ext[2]))
        return false;  // not the layout forward.hpp sizes: the general passes
      const index_t HV = x.v.ext[2], K = x.k.ext[3], V = x.v.ext[3], tiles_v = (V + piece_state_shape::BV - 1) / piece_state_shape::BV;
      const std::vector<std::int64_t> slab_cu = piece_slabs(cu, HV * tiles_v);
      const index_t slabs = static_cast<index_t>(slab_cu.size()) - 1;
      if (slabs > 65535) return false;  // grid z; a call this large keeps the chunk kernel
      std::vector<std::int32_t> first{0};
      for (index_t n = 0, s = 0; n < pieces; ++n) {
        while (s < slabs && slab_cu[s] < cu[n + 1]) ++s;
        first.push_back(static_cast<std::int32_t>(s));
      }
      const bool one_each = slabs == pieces;  // every piece one slab: the kernel writes the states itself
      const std::int64_t* seqlens = upload(std::span<const std::int64_t>(slab_cu));
      const std::int32_t* first_slab = one_each ? nullptr : upload(std::span<const std::int32_t>(first));
      float* P = one_each ? nullptr : alloc<float>(static_cast<std::size_t>(slabs * HV * K * V));
      float* L = one_each || !decays ? nullptr : alloc<float>(static_cast<std::size_t>(slabs * HV * K));
      if (counting()) return true;
      arguments<T, float> y = x;
      y.cu_seqlens = {}, y.initial_state = {}, y.final_state = {}, y.residual = {};
      const problem p = validate_chunkwise<Rule, read::identity>(y, slabs);
      if (x.final_state.ext[0] != pieces || x.final_state.ext[1] != HV || x.final_state.ext[2] != K ||
          x.final_state.ext[3] != V)  // forward.hpp sized it: a bug if met
        throw error("linea: the segmented forward's piece states do not match " + std::to_string(pieces) + " pieces");
      if (HV == 0 || K == 0 || V == 0) return true;
      kernel_args<T> k = make_kernel_args(y, p);
      k.cu_seqlens = seqlens;
      const view<float, 4> out = one_each ? x.final_state : contiguous<4>(P, {slabs, HV, K, V});
      using E = typename operand_type<T>::type;
      constexpr auto kernel = piece_state_kernel<Rule, T, E>;
      allow_dynamic_shared<kernel>(piece_state_shape::bytes, current_device());
      prefer_max_shared_carveout<kernel>();  // three CTAs of 71 KB an SM
      const dim3 grid(static_cast<unsigned>(tiles_v), static_cast<unsigned>(HV), static_cast<unsigned>(slabs));
      kernel<<<grid, piece_state_shape::threads, piece_state_shape::bytes, stream_>>>(k, out, L, one_each ? M.ptr : nullptr);
      check_launch("piece_state_kernel");
      if (!one_each) {
        const bool wide = V % 4 == 0 && reinterpret_cast<std::uintptr_t>(x.final_state.ptr) % 16 == 0;
        const index_t lanes = wide ? K * V / 4 : K * V, per_cta = piece_state_shape::reduce_threads;
        const dim3 rgrid(static_cast<unsigned>((lanes + per_cta - 1) / per_cta), static_cast<unsigned>(pieces),
                         static_cast<unsigned>(HV));
        piece_state_reduce_kernel<float><<<rgrid, piece_state_shape::reduce_threads, 0, stream_>>>(
            P, L, first_slab, x.final_state.ptr, M.ptr, HV, K, V, wide);
        check_launch("piece_state_reduce_kernel");
      }
      return true;
    }
  }

  template <class S>
  void fill_identity(const view<S, 4>& dst) {
    if (dst.size() == 0 || counting()) return;
    fill_identity_kernel<S><<<blocks(dst.size()), 256, 0, stream_>>>(dst);
    check_launch("fill_identity_kernel");
  }

  template <class S>
  void copy_states(const view<S, 4>& dst, const view<const S, 4>& src, std::span<const std::int32_t> map) {
    if (dst.size() == 0) return;
    const std::int32_t* m = upload(map);
    if (counting()) return;
    copy_states_kernel<S><<<blocks(dst.size()), 256, 0, stream_>>>(dst, src, m);
    check_launch("copy_states_kernel");
  }

  // The chains S ← M S + B: staged_combine_kernel where it fits (the erasing rules' full transitions), else
  // combine_rowwise.
  template <class S>
  void combine(const S* from, S* to, const S* M, const S* B, const segments::state_dims& d,
               std::span<const segments::chain> chains) {
    if constexpr (std::is_same_v<S, float>) {
      if (!chains.empty() && d.HV > 0 && staged_combine_fits(M, B, d)) {
        const segments::chain* c = upload(chains);
        if (counting()) return;
        using sh = staged_combine_shape;
        allow_dynamic_shared<staged_combine_kernel<float>>(sh::bytes, current_device());
        const dim3 grid(static_cast<unsigned>(chains.size()), static_cast<unsigned>(d.HV),
                        static_cast<unsigned>(d.V / sh::cols));
        staged_combine_kernel<float><<<grid, sh::threads, sh::bytes, stream_>>>(from, to, M, B, d, c);
        check_launch("staged_combine_kernel");
        return;
      }
    }
    combine_rowwise(from, to, M, B, d, chains);
  }
  // combine_kernel (segment_kernels.hpp): every case, M read from global memory inside the product.
  template <class S>
  void combine_rowwise(const S* from, S* to, const S* M, const S* B, const segments::state_dims& d,
                       std::span<const segments::chain> chains) {
    if (chains.empty() || d.HV == 0 || d.V == 0) return;
    if (d.K > combine_kmax) throw error("the CUDA segment combine supports K <= 128, but K = " + std::to_string(d.K));
    const segments::chain* c = upload(chains);
    if (counting()) return;
    const dim3 grid(static_cast<unsigned>(chains.size()), static_cast<unsigned>(d.HV),
                    static_cast<unsigned>((d.V + combine_cols - 1) / combine_cols));
    combine_kernel<S><<<grid, combine_threads, 0, stream_>>>(from, to, M, B, d, c);
    check_launch("combine_kernel");
  }

 private:
  // The slabs of piece_states: every piece of `cu` cut into equal runs of whole 64-token chunks (its last shorter),
  // as many as give the kernel about slab_ctas_per_sm_ CTAs per SM over the call (`units` CTAs per slab: value heads
  // × value tiles), slabs of at least min_slab tokens. Offsets as cu's.
  static constexpr index_t min_slab = 256;
  std::vector<std::int64_t> piece_slabs(std::span<const std::int64_t> cu, index_t units) const {
    index_t longest = 0;
    for (std::size_t n = 0; n + 1 < cu.size(); ++n) longest = std::max<index_t>(longest, cu[n + 1] - cu[n]);
    const index_t tokens = cu.back() - cu.front();
    const index_t ctas = slab_ctas_per_sm_ * multiprocessor_count(current_device());
    const index_t target = std::max<index_t>(min_slab, (tokens * std::max<index_t>(units, 1) + ctas - 1) / ctas);
    const index_t per_piece = std::max<index_t>(1, (longest + target - 1) / target);
    index_t slab = ((longest + per_piece - 1) / per_piece + 63) / 64 * 64;
    slab = std::max<index_t>(slab, 64);
    std::vector<std::int64_t> s{cu.front()};
    for (std::size_t n = 0; n + 1 < cu.size(); ++n)
      for (std::int64_t t = cu[n] + slab; ; t += slab) {
        s.push_back(std::min<std::int64_t>(t, cu[n + 1]));
        if (t >= cu[n + 1]) break;
      }
    return s;
  }
  static unsigned blocks(index_t n) { return static_cast<unsigned>(std::min<index_t>((n + 255) / 256, 4096)); }
  bool counting() const { return source_ == scratch_source::count; }

 protected:
  // piece_states' slab count, in CTAs per SM over the call (piece_state_kernel runs three an SM). seg16 measured
  // 3, 6, 9, 12 and 18 on the H200 (bench/cuda/README.md); segments_bench sets the others.
  static constexpr index_t default_slab_ctas_per_sm = 6;
  index_t slab_ctas_per_sm_ = default_slab_ctas_per_sm;

 private:
  cudaStream_t stream_;
  std::int64_t segment_tokens_;
  scratch_source source_ = scratch_source::allocate;
  unsigned char* base_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;
  std::vector<void*> owned_;
};

// The cost model for this call's kernel (segments::cost_model), calibrated on the H200 (bench/cuda/README.md,
// 2026-12-01: pieces of 4096 tokens were best or near best at 1×32768, 2×16384 and 32768 + 63×512, and cutting lost
// at 2×16384 with the 64-token kernels): the warp-specialised delta kernel runs one CTA per SM over 128 value
// columns; the scalar 64-token kernel two per SM over 64 columns, bandwidth-bound (a large fixed term keeps it
// whole until a single sequence leaves most SMs idle); the general kernel two per SM over 64 columns. gla's kernel
// (perkey_delta_kernel.hpp, 2026-12-02) runs one CTA per SM over 128 value columns.
// Pass M of a decay-only rule (simple_gla, gla) is the decay sums (decay_product_kernel.hpp, seg12 2026-12-03): it
// reads only the gates, a few per cent of pass A, so these rules are modelled as the additive rule (no pass M) plus
// that fraction of pass A in am_passes. (Before, pass M ran the chunk kernel with V = 1: simple_gla's cost ~2.7
// times its pass A per step as a launch of its own, cost_model::m_passes; gla's was counted as 0.7 of pass A.)
// A model, not a contract: it only steers the piece length.
template <class Rule, class T>
segments::cost_model calibrated_model(const arguments<T, float>& a, const problem& p, int sms) {
  const index_t KM = segments::transition_columns<Rule>(p.K);
  bool fast = false;
  constexpr bool per_key = perkey_chunk_rule<Rule, pass::main>;  // gla on the warp-specialised per-key kernel
  // (kda and gdn2 on it too since pk18-next: the erasing branch below, the delta kernel's model — one CTA per SM over
  // 128 value columns; its constants were measured on the delta kernel, not re-measured for these)
  if constexpr ((scalar_chunk_rule<Rule, pass::main> || delta_chunk_rule<Rule, pass::main> ||
                 perkey_pipeline_rule<Rule, pass::main>) && sizeof(T) == 2)
    fast = tiles::inputs_fit(make_kernel_args(a, p));
  segments::cost_model m;
  // pass M of a diagonal transition (the decay sums), in pass A's launches; 0 for the additive rule (M = I) and
  // where pass A is the slab reduction, which writes M itself (device_ops::piece_states, seg16)
  const double decay_m = KM == 1 ? 0.05 : 0.0;
  // pass A of the rules that only add, on 16-bit inputs the slab reduction (piece_state_kernel.hpp), as a fraction
  // of the chunk kernel's launch over the same pieces (pass C's): seg16 2026-12-04 measured at 1×32768 in pieces of
  // 4096 pass A 0.138 ms against pass C 0.322 (linear_attn), 0.168 with pass M against 0.362 (simple_gla) and, on
  // main's per-key loop, ~0.90 against 1.045 (gla). The choices are unchanged — 4096 at 1×32768, 2×16384 and
  // 32768 + 63×512, whole at 8×4096 — and still the best measured (pieces of 1024 and 2048 lose for every rule: pass
  // C's 16 or 32 pieces need a second wave), but for gla's packed case (8192 by 2 %).
  const double piece_state_pass_a = per_key ? 0.9 : 0.45;
  if (fast && erases<Rule>) {
    m.slots = sms, m.units = static_cast<double>(p.HV * ((p.V + 127) / 128));
    // Passes A and M for their final states alone (kernel_args::states_only) and the staged combine, comb15
    // 2026-12-03, gated_delta 1×32768 in pieces of 4096: pass A 0.396 ms, pass M 0.416, pass C ~0.49 (so
    // am_passes 1.65, from 2: 0.486 / 0.499 writing o); a link ~5.7 µs (40 µs for 7, from 184 row-wise) ≈ 48 steps of
    // 0.118 µs (pass C's 4160 steps). The choices are those of the old constants (2, 320), which the H200's sweep
    // still favours: 4096 at 1×32768, 2×16384 and packed, 8×4096 whole.
    m.am_passes = 1.65, m.link = 48, m.fixed = 800;
    // Cut at a 10 % modelled saving: at 2×16384 the model gives pieces of 4096 0.866 of the whole call and the H200
    // measured 0.907 (gated_delta 1.614 against 1.779 ms, delta 1.330 / 1.424; linear_attn on the additive model
    // 0.668 / 0.719; lead's final call, 2026-12-02 fourth session); the default 15 % kept them whole.
    m.min_saving = 0.10;
  } else if (fast && per_key) {
    m.slots = sms, m.units = static_cast<double>(p.HV * ((p.V + 127) / 128));
    m.am_passes = piece_state_pass_a, m.link = 20, m.fixed = 300;
  } else if (fast) {
    // linear_attn and simple_gla: at 1×32768 pieces of 4096 measured 0.669 ms against 0.712 for 2048 (linear_attn,
    // fwd7 2026-12-02)
    m.slots = 2.0 * sms, m.units = static_cast<double>(p.HV * ((p.V + 63) / 64));
    m.am_passes = piece_state_pass_a, m.link = 70, m.fixed = 6000;
    m.min_saving = 0.10;  // as the delta kernel above
  } else {
    m.slots = 2.0 * sms, m.units = static_cast<double>(p.HV * ((p.V + 63) / 64));
    // erasing rules (kda, gdn2, float32): passes A and M states only, 1.34 / 1.35 ms against pass C ~1.6 at kda
    // 1×32768 in pieces of 4096 (comb15); a staged link ~5.7 µs ≈ 15 steps of 0.385 µs
    m.am_passes = erases<Rule> ? 1.7 : 1 + decay_m, m.link = erases<Rule> ? 15 : 20, m.fixed = 300;
  }
  return m;
}

// The piece length for this call (0: do not cut): launch::segment_tokens, or the cost model on the device's SMs
// (read once per device: kernel_attributes.hpp).
template <class Rule, class T>
index_t piece_length(const arguments<T, float>& a, const std::vector<std::int64_t>& starts, const problem& p,
                     const cuda::launch& l, int device) {
  if (l.segment_tokens >= 0) return static_cast<index_t>(l.segment_tokens);
  return segments::choose_piece(starts, calibrated_model<Rule>(a, p, multiprocessor_count(device)));
}

template <class Rule, class T>
index_t device_ops::piece_for(const arguments<T, float>& a, const std::vector<std::int64_t>& starts,
                              const problem& p) const {
  cuda::launch l{.stream = stream_};
  l.segment_tokens = segment_tokens_;
  return piece_length<Rule>(a, starts, p, l, current_device());
}

// How the call is cut (a plan with cuts), or no plan: run it whole.
template <class Rule, class Read, class T>
std::optional<segments::plan> segment_plan(const arguments<T, float>& a, const problem& p, const cuda::launch& l,
                                           int device) {
  if constexpr (!std::is_same_v<Read, read::identity>) {
    return std::nullopt;
  } else {
    if (l.segment_tokens == 0 || !l.cu_seqlens.empty() || !segments::applies<Read>(a)) return std::nullopt;
    if (p.K > combine_kmax || p.V > 128) return std::nullopt;
    const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
    const index_t piece = piece_length<Rule>(a, starts, p, l, device);
    if (piece <= 0) return std::nullopt;
    segments::plan plan = segments::make_plan(starts, piece);
    if (!plan.cuts()) return std::nullopt;
    return plan;
  }
}

// The bytes of the segmented forward's scratch under `plan`: the forward itself, run with device_ops that only
// count (nothing allocated or launched), so the size cannot drift from what it carves.
template <class Rule, class T>
std::size_t segment_scratch_bytes(const arguments<T, float>& a, const problem& p, const segments::plan& plan) {
  device_ops counter(nullptr, scratch_source::count, nullptr, 0);
  segments::forward<Rule>(counter, a, p, plan);
  return counter.carved_bytes();
}

// A transport that only tells rank and size: context parallelism's scratch counted without exchanging anything.
class counting_transport final : public cp::transport {
 public:
  explicit counting_transport(const cp::transport& t) : rank_(t.rank()), size_(t.size()) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const void*, void*, std::size_t) override {}

 private:
  int rank_, size_;
};

// The bytes of rank t.rank()'s context-parallel scratch: its forward run with device_ops that only count.
template <class Rule, class T>
std::size_t context_parallel_scratch_bytes(const arguments<T, float>& a, const problem& p, const cp::transport& t,
                                           const cuda::launch& l) {
  device_ops counter(nullptr, scratch_source::count, nullptr, 0, l.segment_tokens);
  counting_transport ct(t);
  cp::forward<Rule>(counter, a, p, ct);
  return counter.carved_bytes();
}

// Runs the call segmented and returns true when it qualifies and cutting pays; false: run it whole. The scratch
// is the caller's workspace (checked against segment_scratch_bytes) or the cached one of (device, stream).
template <class Rule, class Read, class T>
bool run_segmented(const arguments<T, float>& a, const problem& p, const cuda::launch& l) {
  if (l.segment_tokens == 0 || !l.cu_seqlens.empty()) return false;  // before any device query
  const int device = current_device();
  const std::optional<segments::plan> plan = segment_plan<Rule, Read>(a, p, l, device);
  if (!plan) return false;
  workspace_layout w;
  w.bytes = segment_scratch_bytes<Rule>(a, p, *plan);
  expect_workspace_apart(l, w.bytes, a);
  const call_workspace ws(w, l, device);  // throws when the caller's is too small
  device_ops ops(l.stream, scratch_source::carve, ws.base, w.bytes);
  segments::forward<Rule>(ops, a, p, *plan);
  return true;
}

}  // namespace linea::cuda_detail

namespace linea {

// Context parallelism on the CUDA backend: the rank's shard (device views), its transport (cp::nccl_transport,
// backend/cuda/nccl_transport.hpp, or a simulated one), the call's stream. segments/context_parallel.hpp has the
// algorithm and the contract.
template <write_rule_policy Rule, read_policy Read = read::identity, class Backend = backend::cuda, class T>
  requires std::same_as<Backend, backend::cuda>
void context_parallel(const arguments<T, float>& a, cp::transport& t, const cuda::launch& l) {
  static_assert(std::is_same_v<Read, read::identity>,
                "linea::context_parallel: the identity read only (CCQ statistics are not combined across ranks yet)");
  if (!l.cu_seqlens.empty()) throw error("context_parallel takes cu_seqlens as a host span (arguments::cu_seqlens)");
  const problem p = validate_chunkwise<Rule, Read>(a);
  if (a.normalize) throw error("argument 'normalize' is not supported by context_parallel");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is not produced by context_parallel");
  const int device = cuda_detail::current_device();
  cuda_detail::workspace_layout w;
  w.bytes = cuda_detail::context_parallel_scratch_bytes<Rule>(a, p, t, l);
  cuda_detail::expect_workspace_apart(l, w.bytes, a);
  // Too small a caller's workspace throws; so does the cached one of (device, stream) while another call holds it
  // (two ranks as threads on one stream would otherwise wait on each other: this one for the lock, that one for
  // this rank's transport steps).
  const cuda_detail::call_workspace ws(
      w, l, device, "linea::cuda::context_parallel_workspace_size",
      "linea::context_parallel: the workspace linea keeps for this (device, stream) is held by another call (ranks "
      "run as threads on one stream?); give each rank its own stream, or its own launch.workspace of "
      "linea::cuda::context_parallel_workspace_size bytes");
  cuda_detail::device_ops ops(l.stream, cuda_detail::scratch_source::carve, ws.base, w.bytes, l.segment_tokens);
  cp::forward<Rule>(ops, a, p, t);
}

}  // namespace linea

namespace linea::cuda {

// Bytes of workspace a call of any form with these arguments and launch options needs (0: none); the query of the
// caller-supplied workspace (launch::workspace). The index arrays' and the CCQ read's scratch (workspace.hpp), or —
// when the chunkwise form would cut these arguments' long sequences into pieces (segments.hpp) — that form's
// scratch, whichever is larger (a cut call uses only its own). Arguments the chunkwise form rejects count none of
// the latter.
template <class Rule, class Read, class T, class S>
std::size_t workspace_size(const arguments<T, S>& a, const launch& l = {}) {
  std::size_t bytes = cuda_detail::plan_workspace<Read>(a, l).bytes;
  if constexpr (std::is_same_v<Read, read::identity> && std::is_same_v<S, float>) {
    if (l.segment_tokens != 0 && l.cu_seqlens.empty() && a.state_indices.empty() && segments::applies<Read>(a)) {
      try {
        const problem p = validate_chunkwise<Rule, Read>(a);
        const int device = cuda_detail::current_device();
        if (const auto plan = cuda_detail::segment_plan<Rule, Read>(a, p, l, device))
          bytes = std::max(bytes, cuda_detail::segment_scratch_bytes<Rule>(a, p, *plan));
      } catch (const error&) {
        // not a chunkwise call: the form that takes these arguments needs no segmentation scratch
      }
    }
  }
  return bytes;
}


// Bytes of workspace rank t.rank() of linea::context_parallel needs with these arguments (its shard) and launch
// options: its summaries, every rank's gathered ones and, for a shard cut into pieces, the pieces' states. A
// caller's launch::workspace must hold that many bytes; without one, the call carves them from the workspace linea
// keeps per (device, stream) — so ranks run as threads of one process need a stream (or a workspace) each: a rank
// that finds that workspace held by another call throws rather than wait.
template <class Rule, class Read = read::identity, class T>
std::size_t context_parallel_workspace_size(const arguments<T, float>& a, const cp::transport& t, const launch& l = {}) {
  static_assert(std::is_same_v<Read, read::identity>, "linea::context_parallel: the identity read only");
  const problem p = validate_chunkwise<Rule, Read>(a);
  return cuda_detail::context_parallel_scratch_bytes<Rule>(a, p, t, l);
}

}  // namespace linea::cuda
