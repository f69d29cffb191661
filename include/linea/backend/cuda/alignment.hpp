// linea/backend/cuda/alignment.hpp — where the parts of linea's device scratch start: every part (the forward's
// workspace_layout, the segmented forward's carved pieces, the backward's plan and its float32 slots) a multiple of
// part_bytes past a 16-byte aligned base, so every part is 16-byte aligned (float4 loads, 16-byte cp.async) whatever
// the extents. One rounding for all of them: the sizes and the carving agree by construction.
#pragma once
#include <cstddef>

namespace linea::cuda_detail {

inline constexpr std::size_t part_bytes = 256;
// A byte offset or size rounded up to the next part boundary.
inline constexpr std::size_t part_align(std::size_t bytes) { return (bytes + part_bytes - 1) / part_bytes * part_bytes; }

}  // namespace linea::cuda_detail
