// python/src/tensors.hpp — Python arrays (numpy, or any DLPack tensor) as linea views, with the checks that only
// the binding can make: rank, dtype, device. Shapes are left to linea's own validation (core/validate.hpp).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <linea/core/view.hpp>

namespace linea::python {

namespace nb = nanobind;

// The storage type of a call, named as Python names it. The extension computes float32 and float64 arrays; the
// Python layer widens bfloat16 / float16 inputs to float32 first (python/src/dispatch.hpp says why).
enum class storage { float32, float64 };

inline storage storage_from_name(const std::string& name) {
  if (name == "float32") return storage::float32;
  if (name == "float64") return storage::float64;
  throw nb::type_error(("linea: the extension computes float32 or float64 arrays, not " + name).c_str());
}

// f(std::type_identity<T>{}) with T the C++ storage type of `s`.
template <class F>
decltype(auto) with_storage(storage s, F&& f) {
  if (s == storage::float64) return f(std::type_identity<double>{});
  return f(std::type_identity<float>{});
}

// Whether a DLPack dtype holds T.
template <class T>
bool holds(nb::dlpack::dtype d) {
  using code = nb::dlpack::dtype_code;
  const auto c = static_cast<code>(d.code);
  if (d.lanes != 1) return false;
  if constexpr (std::is_same_v<T, float>) return c == code::Float && d.bits == 32;
  else if constexpr (std::is_same_v<T, double>) return c == code::Float && d.bits == 64;
  else if constexpr (std::is_same_v<T, std::int64_t>) return c == code::Int && d.bits == 64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return c == code::Int && d.bits == 32;
  else return false;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else return "int32";
}

inline std::string dtype_string(nb::dlpack::dtype d) {
  using code = nb::dlpack::dtype_code;
  const char* kind = "?";
  switch (static_cast<code>(d.code)) {
    case code::Float: kind = "float"; break;
    case code::Int: kind = "int"; break;
    case code::UInt: kind = "uint"; break;
    case code::Bfloat: kind = "bfloat"; break;
    case code::Bool: kind = "bool"; break;
    default: break;
  }
  return kind + std::to_string(d.bits);
}

// A view of element type E (const for inputs) and rank R over arrays[name]; the empty view ("not given") when
// the name is absent or None. Rank, dtype and device are checked here; strides are kept (linea takes any).
template <class E, int R>
view<E, R> view_of(const nb::dict& arrays, const char* name) {
  using T = std::remove_const_t<E>;
  view<E, R> v;
  if (!arrays.contains(name)) return v;
  nb::handle h = arrays[name];
  if (h.is_none()) return v;
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(h, a))
    throw nb::type_error((std::string("linea: argument '") + name +
                          "' is not an array (a numpy array or a DLPack tensor)").c_str());
  if (a.device_type() != nb::device::cpu::value)
    throw nb::value_error((std::string("linea: argument '") + name +
                           "' is not in CPU memory; this build of linea has the CPU backends only").c_str());
  if (a.ndim() != static_cast<size_t>(R))
    throw nb::value_error((std::string("linea: argument '") + name + "' has " + std::to_string(a.ndim()) +
                           " dimensions; expected " + std::to_string(R)).c_str());
  if (!holds<T>(a.dtype()))
    throw nb::type_error((std::string("linea: argument '") + name + "' has dtype " + dtype_string(a.dtype()) +
                          "; expected " + type_name<T>() + " (every input of a call has the dtype of q; states are "
                          "float32, or float64 for float64 inputs)").c_str());
  if constexpr (!std::is_const_v<E>) {
    // nb::ro accepted read-only memory; an output must be writable.
    nb::ndarray<> w;
    if (!nb::try_cast(h, w))
      throw nb::value_error((std::string("linea: argument '") + name + "' is read-only; it is written").c_str());
  }
  v.ptr = static_cast<E*>(const_cast<void*>(a.data()));
  for (int r = 0; r < R; ++r) {
    v.ext[r] = static_cast<index_t>(a.shape(r));
    v.str[r] = static_cast<index_t>(a.stride(r));
  }
  return v;
}

// A contiguous 1-D integer array as a span (cu_seqlens, state_indices).
template <class I>
std::span<const I> span_of(const nb::dict& arrays, const char* name) {
  const view<const I, 1> v = view_of<const I, 1>(arrays, name);
  if (v.empty()) return {};
  if (v.ext[0] > 1 && v.str[0] != 1)
    throw nb::value_error((std::string("linea: argument '") + name + "' is not contiguous").c_str());
  return {v.ptr, static_cast<std::size_t>(v.ext[0])};
}

}  // namespace linea::python
