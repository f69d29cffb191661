// linea/backend/tags.hpp — backends are tags chosen at compile time (DESIGN.md).
//
// A form is called as linea::recurrent<Rule, Read, Backend>(args). A backend that lacks a combination
// fails to compile with a clear message; nothing falls back silently to something slower.
#pragma once

namespace linea::backend {

struct reference {};  // the float64 oracle (include/linea/reference): readable loops, any scalar type
struct cpu {};        // the CPU path: fused loops (the default backend)
struct cuda {};       // NVIDIA GPUs; only in translation units compiled by nvcc with LINEA_CUDA

template <class Backend>
inline constexpr bool always_false = false;

}  // namespace linea::backend
