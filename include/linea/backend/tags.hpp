// linea/backend/tags.hpp — backends are tags chosen at compile time (DESIGN.md).
//
// A form is called as linea::recurrent<Rule, Read, Backend>(args). A backend that lacks a combination
// fails to compile with a clear message; nothing falls back silently to something slower.
#pragma once
#include <type_traits>

#include "isa.hpp"

namespace linea::backend {

struct reference {};  // the float64 oracle (include/linea/reference): readable loops, any scalar type
struct cuda {};       // NVIDIA GPUs; only in translation units compiled by nvcc with LINEA_CUDA

// The fast CPU path (backend/cpu/: xsimd kernels, threads over (sequence, value head)). Arch is an xsimd
// architecture tag (cpu_arch<xsimd::avx2>), native_arch (the widest instruction set the compiler targets:
// AVX-512 under -march=native on an AVX-512 host) or scalar_arch (one lane, no SIMD).
// The CPU tags carry the translation unit's instruction set (backend/isa.hpp): every form instantiated on them
// gets a symbol of its own per -march level, so units built with different flags never share one.
struct scalar_arch {};
inline namespace LINEA_ISA {
struct generic {};  // plain fused loops (forms/recurrent_head.hpp): the fallback the SIMD kernels are tested against
struct native_arch {};
template <class Arch = native_arch>
struct cpu_arch {};
}  // namespace LINEA_ISA
using cpu = cpu_arch<native_arch>;  // the default backend of every form

template <class Backend>
inline constexpr bool always_false = false;

// What a backend is: a tag that the forms know (forms/*.hpp specialise their *_impl on it). A tag that is not one
// fails at the call, naming the concept, instead of deep inside a form.
template <class B>
struct is_backend : std::false_type {};
template <>
struct is_backend<reference> : std::true_type {};
template <>
struct is_backend<generic> : std::true_type {};
template <>
struct is_backend<cuda> : std::true_type {};
template <class Arch>
struct is_backend<cpu_arch<Arch>> : std::true_type {};
template <class B>
concept backend_tag = is_backend<B>::value;

}  // namespace linea::backend
