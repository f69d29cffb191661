// python/src/tensors.hpp — Python arrays (numpy, or any DLPack tensor) as linea views, with the checks that only
// the binding can make: rank, dtype, device. Shapes are left to linea's own validation (core/validate.hpp).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <linea/core/seqlens.hpp>
#include <linea/core/storage.hpp>
#include <linea/core/view.hpp>

namespace linea::python {

namespace nb = nanobind;

// The storage type of a call, named as Python names it. On the CPU the extension computes float32 and float64
// arrays (the Python layer widens bfloat16 / float16 inputs to float32 first: python/src/dispatch.hpp says why);
// the CUDA backend takes float32, bfloat16 and float16 as they are.
enum class storage { float32, float64, bfloat16, float16 };

inline storage storage_from_name(const std::string& name) {
  if (name == "float32") return storage::float32;
  if (name == "float64") return storage::float64;
  if (name == "bfloat16") return storage::bfloat16;
  if (name == "float16") return storage::float16;
  throw nb::type_error(("linea: the extension computes float32, float64, bfloat16 or float16 arrays, not " + name).c_str());
}

// f(std::type_identity<T>{}) with T the C++ storage type of `s`, for the CPU (float, double).
template <class F>
decltype(auto) with_storage(storage s, F&& f) {
  if (s == storage::float64) return f(std::type_identity<double>{});
  if (s != storage::float32) throw nb::type_error("linea: the CPU backends compute float32 or float64 arrays");
  return f(std::type_identity<float>{});
}

// Where every array of one call lives: q's device (DLPack device type and id), taken from the first array read.
struct device {
  int type = nb::device::cpu::value;
  int id = 0;
  bool known = false;
  bool cpu() const { return type == nb::device::cpu::value; }
  std::string name() const { return cpu() ? std::string("cpu") : "cuda:" + std::to_string(id); }
};

// Whether a DLPack dtype holds T.
template <class T>
bool holds(nb::dlpack::dtype d) {
  using code = nb::dlpack::dtype_code;
  const auto c = static_cast<code>(d.code);
  if (d.lanes != 1) return false;
  if constexpr (std::is_same_v<T, float>) return c == code::Float && d.bits == 32;
  else if constexpr (std::is_same_v<T, double>) return c == code::Float && d.bits == 64;
  else if constexpr (std::is_same_v<T, bf16>) return c == code::Bfloat && d.bits == 16;
  else if constexpr (std::is_same_v<T, fp16>) return c == code::Float && d.bits == 16;
  else if constexpr (std::is_same_v<T, std::int64_t>) return c == code::Int && d.bits == 64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return c == code::Int && d.bits == 32;
  else return false;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, bf16>) return "bfloat16";
  else if constexpr (std::is_same_v<T, fp16>) return "float16";
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

// linea's field names (linea::arguments, "ccq.*", "gate.*"; linea::gradients).
inline constexpr const char* field_names[] = {
    "q", "k", "v", "g", "gk", "beta", "b", "w", "initial_state", "cu_seqlens", "state_indices", "gate.A_log",
    "gate.dt_bias", "ccq.lambda", "ccq.log_decay", "ccq.C0", "ccq.m0", "ccq.z0", "ccq.C", "ccq.m", "ccq.z",
    "ccq.q_tilde", "o", "final_state", "residual",
    // linea::gradients
    "d_o", "d_final_state", "dq", "dk", "dv", "dg", "dgk", "dbeta", "db", "dw", "d_initial_state", "dA_log",
    "ddt_bias", "dlambda", "dccq_log_decay", "dC0", "dm0", "dz0"};
inline constexpr int field_count = sizeof(field_names) / sizeof(field_names[0]);

consteval int field(std::string_view name) {
  for (int i = 0; i < field_count; ++i)
    if (name == field_names[i]) return i;
  throw "linea::python: no such field";  // a compile-time error: field() is consteval
}

// One array as the binding reads it: a numpy array (buffer protocol), a DLPack tensor (nanobind's ndarray), or the
// description the Python layer makes of a torch tensor, (tag, data_ptr, shape, stride, dtype code, device index;
// python/linea/_arrays.py, for_kernel): torch's __dlpack__ costs ~5 µs a tensor, the description ~1 µs.
struct array_info {
  const void* ptr = nullptr;
  std::size_t ndim = 0;
  std::int64_t shape[8] = {}, stride[8] = {};
  nb::dlpack::dtype dtype{};
  device where;
  bool found = false;     // an array (or a description) at all
  bool writable = false;  // nanobind's cast without nb::ro succeeded (descriptions: torch tensors, writable)
};

inline nb::dlpack::dtype described_dtype(long code) {
  using c = nb::dlpack::dtype_code;
  const auto make = [](c k, int bits) { return nb::dlpack::dtype{static_cast<std::uint8_t>(k), static_cast<std::uint8_t>(bits), 1}; };
  switch (code) {
    case 0: return make(c::Float, 32);
    case 1: return make(c::Float, 64);
    case 2: return make(c::Bfloat, 16);
    case 3: return make(c::Float, 16);
    case 4: return make(c::Int, 32);
    case 5: return make(c::Int, 64);
    default: return make(c::UInt, 0);  // no dtype linea takes
  }
}

// The first item of every description: an object only the extension makes (_linea._description_tag), so that a tuple
// a caller passes where an array goes is refused as "not an array" instead of its number being read as an address.
inline PyObject* description_tag() {
  static PyObject* const tag = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type));
  return tag;
}
inline bool is_description(PyObject* t) {
  return PyTuple_CheckExact(t) && PyTuple_GET_SIZE(t) == 6 && PyTuple_GET_ITEM(t, 0) == description_tag();
}

inline bool read_description(PyObject* description, array_info& r) {
  // (the items after the tag)
  const auto item = [description](Py_ssize_t i) { return PyTuple_GET_ITEM(description, i + 1); };
  PyObject* shape = item(1);
  PyObject* stride = item(2);
  if (!PyTuple_Check(shape) || !PyTuple_Check(stride) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(stride) ||
      PyTuple_GET_SIZE(shape) > 8)
    return false;
  r.ptr = PyLong_AsVoidPtr(item(0));
  r.ndim = static_cast<std::size_t>(PyTuple_GET_SIZE(shape));
  for (std::size_t d = 0; d < r.ndim; ++d) {
    r.shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
    r.stride[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(stride, d));
  }
  r.dtype = described_dtype(PyLong_AsLong(item(3)));
  const long index = PyLong_AsLong(item(4));
  r.where = index < 0 ? device{nb::device::cpu::value, 0, true} : device{nb::device::cuda::value, int(index), true};
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// The DLPack dtype of a buffer-protocol format ('f', '<f', 'q', ...) with that item size; false for formats linea
// takes no arrays of (bfloat16's is not standard: such arrays take nanobind's path).
inline bool buffer_dtype(const char* format, Py_ssize_t itemsize, nb::dlpack::dtype& d) {
  using c = nb::dlpack::dtype_code;
  if (!format) return false;
  if (*format == '@' || *format == '=' || *format == '<') ++format;  // native order (x86-64 and aarch64: little)
  if (format[0] == '\0' || format[1] != '\0') return false;
  c code;
  switch (format[0]) {
    case 'f': case 'd': case 'e': code = c::Float; break;
    case 'i': case 'l': case 'q': code = c::Int; break;
    default: return false;
  }
  d = nb::dlpack::dtype{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(8 * itemsize), 1};
  return true;
}

// A numpy array (or any buffer exporter) through the buffer protocol: ~0.1 µs, where nanobind's DLPack import
// costs ~0.5 µs an array (a capsule per array). False when the buffer is not one linea reads (then nanobind's).
inline bool read_buffer(PyObject* o, array_info& r) {
  Py_buffer b;
  if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  bool ok = b.ndim <= 8 && b.itemsize > 0 && buffer_dtype(b.format, b.itemsize, r.dtype);
  if (ok) {
    r.ptr = b.buf, r.ndim = static_cast<std::size_t>(b.ndim);
    for (std::size_t d = 0; d < r.ndim; ++d) {
      r.shape[d] = b.shape[d];
      ok = ok && b.strides[d] % b.itemsize == 0;  // strides in elements, as linea's views take them
      r.stride[d] = b.strides[d] / b.itemsize;
    }
    r.writable = !b.readonly;
    r.where = device{nb::device::cpu::value, 0, true};
  }
  PyBuffer_Release(&b);  // the caller's dict holds the array for the call
  r.found = ok;
  return ok;
}

// Whether h is a buffer stored in the other byte order ('>' or '!': big-endian; the hosts linea builds for are
// little-endian, buffer_dtype above): named as such, where it would be "not an array".
inline bool big_endian_buffer(nb::handle h) {
  if (!PyObject_CheckBuffer(h.ptr())) return false;
  Py_buffer b;
  if (PyObject_GetBuffer(h.ptr(), &b, PyBUF_RECORDS_RO) != 0) return PyErr_Clear(), false;
  const bool big = b.format && (b.format[0] == '>' || b.format[0] == '!');
  PyBuffer_Release(&b);
  return big;
}

inline array_info info_of(nb::handle h) {
  array_info r;
  if (!h.is_valid()) return r;
  if (is_description(h.ptr())) {
    r.found = r.writable = read_description(h.ptr(), r);
    return r;
  }
  if (PyObject_CheckBuffer(h.ptr()) && read_buffer(h.ptr(), r)) return r;
  r = array_info{};
  const auto fill = [&](const auto& a) {
    r.ptr = a.data(), r.ndim = a.ndim(), r.dtype = a.dtype();
    r.where = {static_cast<int>(a.device_type()), static_cast<int>(a.device_id()), true};
    for (std::size_t d = 0; d < r.ndim && d < 8; ++d) r.shape[d] = a.shape(d), r.stride[d] = a.stride(d);
    r.found = r.ndim <= 8;
  };
  if (nb::ndarray<> w; nb::try_cast(h, w)) {
    fill(w);
    r.writable = true;
  } else if (nb::ndarray<nb::ro> a; nb::try_cast(h, a)) {
    fill(a);
  }
  return r;
}

// The arrays of one call by linea's field names (linea::arguments, "ccq.*", "gate.*"; linea::gradients), found
// in one pass over the caller's dict: one string compare per entry given, instead of a dict lookup (and a Python
// string) per field that could be given. An unknown name is an error (a misspelt field would be ignored otherwise).
class named_arrays {
 public:
  explicit named_arrays(const nb::dict& arrays) {
    for (auto [key, value] : arrays) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(key.ptr(), &n);
      if (!s) throw nb::python_error();
      const std::string_view name(s, static_cast<std::size_t>(n));
      int i = 0;
      while (i < field_count && name != field_names[i]) ++i;
      if (i == field_count) throw nb::value_error(("linea: no argument is named '" + std::string(name) + "'").c_str());
      if (!value.is_none()) given_[i] = value;
    }
  }
  named_arrays() = default;
  // python/src/fla_call.hpp: fields known by index, with the description it has already read (the caller keeps it
  // for the call): read once, not packed into a tuple and read again (bench/README.md, "Python call overhead").
  void set(int i, nb::handle h, const array_info* read = nullptr) { given_[i] = h, read_[i] = read; }
  nb::handle operator[](int i) const { return given_[i]; }
  // The description of arrays[i]: the one given with it, or read now (info_of).
  array_info info(int i) const { return read_[i] ? *read_[i] : info_of(given_[i]); }

 private:
  nb::handle given_[field_count] = {};
  const array_info* read_[field_count] = {};
};

// A view of element type E (const for inputs) and rank R over arrays[i]; the empty view ("not given") when it is
// absent. Rank, dtype and device (`on`: the first array's, q's; set by the first call) are checked here; strides
// are kept (linea takes any).
template <class E, int R>
view<E, R> view_of(const named_arrays& arrays, int i, device& on) {
  using T = std::remove_const_t<E>;
  const char* name = field_names[i];
  view<E, R> v;
  nb::handle h = arrays[i];
  if (!h.is_valid()) return v;
  const array_info a = arrays.info(i);
  if (!a.found)
    throw nb::type_error((std::string("linea: argument '") + name +
                          (big_endian_buffer(h) ? "' is big-endian; linea takes arrays in the machine's byte order "
                                                  "(numpy: x.astype(x.dtype.newbyteorder('=')))"
                                                : "' is not an array (a numpy array or a DLPack tensor)"))
                             .c_str());
  if (!std::is_const_v<E> && !a.writable)  // inputs may be read-only memory; an output must be writable
    throw nb::value_error((std::string("linea: argument '") + name + "' is read-only; it is written").c_str());
  if (!on.known) on = a.where;
  if (a.where.type != on.type || a.where.id != on.id)
    throw nb::value_error((std::string("linea: argument '") + name + "' is on " + a.where.name() + ", but q is on " +
                           on.name() + " (every array of a call is on q's device)").c_str());
  if (a.ndim != static_cast<std::size_t>(R))
    throw nb::value_error((std::string("linea: argument '") + name + "' has " + std::to_string(a.ndim) +
                           " dimensions; expected " + std::to_string(R)).c_str());
  if (!holds<T>(a.dtype))
    throw nb::type_error((std::string("linea: argument '") + name + "' has dtype " + dtype_string(a.dtype) +
                          "; expected " + type_name<T>() +
                          (std::is_integral_v<T> ? " (index arrays: cu_seqlens int32 or int64, state_indices int32 "
                                                   "or int64)"
                                                 : " (every input of a call has the dtype of q; states are float32, or "
                                                   "float64 for float64 inputs)")).c_str());
  v.ptr = static_cast<E*>(const_cast<void*>(a.ptr));
  for (int r = 0; r < R; ++r) {
    v.ext[r] = static_cast<index_t>(a.shape[r]);
    v.str[r] = static_cast<index_t>(a.stride[r]);
  }
  return v;
}

// A contiguous 1-D integer array as a span (cu_seqlens, state_indices), on `on`.
template <class I>
std::span<const I> span_of(const named_arrays& arrays, int i, device& on) {
  const view<const I, 1> v = view_of<const I, 1>(arrays, i, on);
  if (v.empty()) return {};
  if (v.ext[0] > 1 && v.str[0] != 1)
    throw nb::value_error((std::string("linea: argument '") + field_names[i] + "' is not contiguous").c_str());
  return {v.ptr, static_cast<std::size_t>(v.ext[0])};
}

// cu_seqlens as linea takes it: int64 or int32 entries (fla's tensors are int32), contiguous.
inline cu_seqlens_span seqlens_of(const named_arrays& arrays, int i, device& on) {
  if (holds<std::int32_t>(arrays.info(i).dtype)) return span_of<std::int32_t>(arrays, i, on);
  return span_of<std::int64_t>(arrays, i, on);
}

}  // namespace linea::python
