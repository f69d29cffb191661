// linea/backend/cuda/decode_order.hpp — which batch row a block of the decode kernel serves.
//
// The blocks of a grid start roughly in order, so the state rows in flight together (~25 at B = 256, H = 16,
// K = V = 128 on an H200) are those of consecutive batch rows. Through a permuted pool (state_indices) they lie
// scattered over it, and the H200 reads them 1.7–2.8 % slower than a contiguous window of rows (rows permuted in
// pairs as slow: DRAM locality, not TLB pages; bench/cuda/README.md, dec5 and dec6). decode_walk::pool lets block z
// serve the batch row whose state comes z-th in the pool, so that the pool is walked in address order — when that
// pays: the batch's states out of order and within 2·B consecutive slots. Sorting costs each block a radix select
// over the indices (~10 block-wide counts); a batch already in order, or one spread over a pool much larger than
// itself (its rows far apart even when sorted), keeps the batch's order after one count. Measured at B = 256
// (fraction of copy bandwidth, every rule, against the batch's order): a permuted pool +0.6–1.8 %, a pool twice the
// batch −0.3…+0.6 %, rows in order and a pool four times the batch −0.7…−1.1 %, no indices unchanged. The library's
// choice (launch.hpp); decode_walk::batch keeps the batch's order.
#pragma once
#include <climits>

#include "params.hpp"

namespace linea::cuda_detail {

enum class decode_walk { batch, pool };
constexpr int pool_walk_keys = 8;  // per thread: the pool walk sorts batches of up to 8 · threads rows

template <int NW>
struct pool_walk_shared {
  int counts[2][NW];              // a bit's count per warp, two rounds' worth (no barrier between rounds)
  int lo[NW], hi[NW], sorted[NW];  // per warp: the smallest and largest state, whether its rows are in order
  int found;
};

// The batch row that block z serves under decode_walk::pool (every thread of the block calls it; one result).
// Keys (state − lo + 1, batch row), 0 for a row without a state (−1 or out of range: it sorts first), are distinct,
// so the blocks z = 0 .. B − 1 serve every batch row once. Radix select from the top bit, one block-wide count a
// bit, stopping when one key is left (with distinct states after ⌈log2(hi − lo + 2)⌉ bits at most).
template <int NW>
__device__ __forceinline__ int pool_order_row(const std::int32_t* idx, index_t N, int B, int z, int tid,
                                              pool_walk_shared<NW>& sh) {
  constexpr int threads = 32 * NW, KPT = pool_walk_keys;
  if (B > KPT * threads) return z;
  const int warp = tid >> 5, lane = tid & 31;
  auto state = [&](int n) {
    const std::int32_t s = idx[n];
    return s >= 0 && s < N ? static_cast<int>(s) : -1;
  };

  // ---- 1. one count: the batch's states' range, and whether its rows are in pool order already ---------------------
  int st[KPT];
  int lo = INT_MAX, hi = -1;
  bool in_order = true;
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const int n = tid + j * threads;
    st[j] = n < B ? state(n) : -1;
    if (n + 1 < B) in_order = in_order && st[j] <= state(n + 1);
    if (st[j] >= 0) lo = min(lo, st[j]), hi = max(hi, st[j]);
  }
  lo = __reduce_min_sync(0xffffffffu, lo), hi = __reduce_max_sync(0xffffffffu, hi);
  in_order = __all_sync(0xffffffffu, in_order);
  if (lane == 0) sh.lo[warp] = lo, sh.hi[warp] = hi, sh.sorted[warp] = in_order;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < NW; ++w) lo = min(lo, sh.lo[w]), hi = max(hi, sh.hi[w]), in_order = in_order && sh.sorted[w];
  if (in_order || hi < lo || hi - lo >= 2 * B) return z;

  // ---- 2. radix select of the z-th key ------------------------------------------------------------------------------
  const int rb = 32 - __clz(B > 1 ? B - 1 : 1);  // bits of a batch row
  const int sb = 32 - __clz(hi - lo + 1);        // bits of state − lo + 1 ∈ [0, hi − lo + 1]; sb + rb ≤ 22
  unsigned key[KPT];
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const int n = tid + j * threads;  // ~0: no row (a key has at most 22 bits, so this matches no prefix)
    key[j] = n < B ? static_cast<unsigned>(st[j] >= 0 ? st[j] - lo + 1 : 0) << rb | static_cast<unsigned>(n) : ~0u;
  }
  unsigned prefix = 0;     // the selected key's bits above `bit`
  int want = z, left = B;  // its rank among the keys that match the prefix; how many do
  for (int bit = sb + rb - 1; bit >= 0; --bit) {
    if (left == 1) {  // one key matches: its thread says which row
#pragma unroll
      for (int j = 0; j < KPT; ++j)
        if (key[j] >> (bit + 1) == prefix) sh.found = static_cast<int>(key[j] & ((1u << rb) - 1));
      __syncthreads();
      return sh.found;
    }
    int c = 0;
#pragma unroll
    for (int j = 0; j < KPT; ++j) c += key[j] >> bit == prefix << 1;  // matches, with a 0 at `bit`
    c = __reduce_add_sync(0xffffffffu, c);
    if (lane == 0) sh.counts[bit & 1][warp] = c;
    __syncthreads();
    int zeros = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) zeros += sh.counts[bit & 1][w];
    prefix <<= 1;
    if (want < zeros) left = zeros;
    else want -= zeros, left -= zeros, prefix |= 1;
  }
  return static_cast<int>(prefix & ((1u << rb) - 1));
}

}  // namespace linea::cuda_detail
