// python/src/fla_call.hpp — the common case of a public call (linea.chunk_* / linea.fused_recurrent_*) done in C++:
// fla's arguments read here, the outputs allocated here, the kernel called, (o, ht) returned. The Python layer
// (python/linea/_ops.py) calls `fla_forward` first and keeps its own path, which has every behaviour, for the rest:
// fla_forward returns None — before any work — whenever the call is not one it takes as it is:
//   - an input that is not a numpy array or a torch tensor, or whose dtype differs from q's (the Python layer
//     widens 16-bit CPU inputs and float32 gates next to 16-bit q, k, v), a state not in the state type;
//   - torch tensors that need gradients while grad mode is on (autograd: python/linea/_autograd.py);
//   - index arrays that are not contiguous int32 (int64 for cu_seqlens) arrays where the call reads them;
//   - linea keyword arguments other than ssm_state_indices and chunk_size; anything odd (a scale that is not a
//     number, q or v not of rank 4: the Python layer raises fla's errors).
// Errors found by linea itself (shapes) are raised here as on the Python path: the same extension call.
// Why: the Python layer's argument handling cost 15–45 µs a call (bench/README.md, "Python call overhead").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include <linea/core/error.hpp>
#include <linea/rules/list.hpp>

#include "call.hpp"
#include "errors.hpp"
#include "tensors.hpp"

namespace linea::python::fla {

namespace nb = nanobind;

inline bool same_device(const device& a, const device& b) { return a.type == b.type && a.id == b.id; }

inline bool dtype_is(const array_info& a, nb::dlpack::dtype d) {
  return a.dtype.code == d.code && a.dtype.bits == d.bits && a.dtype.lanes == d.lanes;
}

// Python objects looked up once: numpy's and torch's types, allocators and dtypes, and the attribute names read
// on every tensor (interned strings). torch is looked up only once a torch tensor is seen (never imported here).
struct cache {
  PyTypeObject* ndarray = nullptr;
  nb::object np_empty, np_float32, np_float64;
  PyTypeObject* tensor = nullptr;  // torch.Tensor (subclasses too: nn.Parameter)
  nb::object t_dtype[6];           // torch.float32, float64, bfloat16, float16, int32, int64 (described_dtype's codes)
  nb::object is_grad_enabled, raw_stream, from_numpy, empty_like;
  nb::object s_dtype, s_data_ptr, s_shape, s_stride, s_is_contiguous, s_get_device, s_requires_grad, s_is_neg,
      s_new_empty;
  std::vector<nb::object> float32_on;  // an empty float32 tensor per CUDA device: what a state is allocated like
  bool torch_tried = false;

  static cache& get() {
    static cache* c = [] {
      auto* c = new cache;  // never destroyed: the interpreter may be gone at exit
      nb::module_ np = nb::module_::import_("numpy");
      c->ndarray = reinterpret_cast<PyTypeObject*>(np.attr("ndarray").ptr());
      c->np_empty = np.attr("empty");
      c->np_float32 = np.attr("dtype")("float32");
      c->np_float64 = np.attr("dtype")("float64");
      const auto name = [](const char* s) { return nb::steal(PyUnicode_InternFromString(s)); };
      c->s_dtype = name("dtype"), c->s_data_ptr = name("data_ptr"), c->s_shape = name("shape");
      c->s_stride = name("stride"), c->s_is_contiguous = name("is_contiguous"), c->s_get_device = name("get_device");
      c->s_requires_grad = name("requires_grad"), c->s_is_neg = name("is_neg"), c->s_new_empty = name("new_empty");
      return c;
    }();
    return *c;
  }

  // torch, if the caller has imported it.
  bool find_torch() {
    if (tensor) return true;
    if (torch_tried) return false;
    PyObject* modules = PyImport_GetModuleDict();
    PyObject* torch = PyDict_GetItemString(modules, "torch");  // borrowed
    if (!torch) return false;
    torch_tried = true;
    nb::handle t(torch);
    const char* names[] = {"float32", "float64", "bfloat16", "float16", "int32", "int64"};
    for (int i = 0; i < 6; ++i) t_dtype[i] = t.attr(names[i]);
    is_grad_enabled = t.attr("is_grad_enabled");
    from_numpy = t.attr("from_numpy");
    empty_like = t.attr("empty_like");
    nb::object c = t.attr("_C");
    raw_stream = nb::hasattr(c, "_cuda_getCurrentRawStream") ? c.attr("_cuda_getCurrentRawStream") : nb::none();
    tensor = reinterpret_cast<PyTypeObject*>(t.attr("Tensor").ptr());
    return true;
  }

  // A tensor of dtype `code` on q's CUDA device to allocate an output like: q itself when it has that dtype, else
  // (a state next to 16-bit q) an empty float32 tensor made once per device and kept.
  nb::handle like(nb::handle q, const array_info& aq, int code) {
    if (dtype_is(aq, described_dtype(code))) return q;
    const auto i = static_cast<std::size_t>(aq.where.id);
    if (float32_on.size() <= i) float32_on.resize(i + 1);
    if (!float32_on[i].is_valid())
      float32_on[i] = q.attr("new_empty")(nb::make_tuple(0), nb::arg("dtype") = t_dtype[0]);
    return float32_on[i];
  }
};

// One argument as read here: its description (array_info), given to the kernel call with the object itself (which
// the caller holds for the call): read once, never packed into a Python tuple and read again.
struct read_array {
  array_info info;
  nb::handle passed;
  bool requires_grad = false;
  bool contiguous = false;  // a torch tensor whose is_contiguous() was True
};

enum class kind { numpy, torch };

// Dense row-major strides of a shape (in elements).
inline void dense_strides(array_info& a) {
  std::int64_t s = 1;
  for (std::size_t d = a.ndim; d-- > 0;) a.stride[d] = s, s *= a.shape[d];
}

// A torch tensor's pointer, shape, strides, dtype and device through its Python attributes. A contiguous tensor's
// strides are its shape's dense ones (torch's is_contiguous() allocates nothing, where stride() builds a tuple; a
// size-1 dimension's stride, which torch's contiguity ignores, never moves the address).
inline bool read_tensor(cache& c, PyObject* t, read_array& r) {
  nb::object dtype = nb::steal(PyObject_GetAttr(t, c.s_dtype.ptr()));
  if (!dtype.is_valid()) return PyErr_Clear(), false;
  int code = -1;
  for (int i = 0; i < 6; ++i)
    if (dtype.ptr() == c.t_dtype[i].ptr()) code = i;
  if (code < 0) return false;
  nb::object neg = nb::steal(PyObject_CallMethodNoArgs(t, c.s_is_neg.ptr()));
  if (!neg.is_valid() || neg.ptr() != Py_False) return PyErr_Clear(), false;  // a lazy negation: Python's path
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(t, c.s_data_ptr.ptr()));
  nb::object shape = nb::steal(PyObject_GetAttr(t, c.s_shape.ptr()));
  nb::object dense = nb::steal(PyObject_CallMethodNoArgs(t, c.s_is_contiguous.ptr()));
  nb::object dev = nb::steal(PyObject_CallMethodNoArgs(t, c.s_get_device.ptr()));
  nb::object grad = nb::steal(PyObject_GetAttr(t, c.s_requires_grad.ptr()));
  if (!ptr.is_valid() || !shape.is_valid() || !dense.is_valid() || !dev.is_valid() || !grad.is_valid())
    return PyErr_Clear(), false;
  array_info& a = r.info;
  a = array_info{};
  if (!PyTuple_Check(shape.ptr()) || PyTuple_GET_SIZE(shape.ptr()) > 8) return false;  // torch.Size: a tuple
  a.ndim = static_cast<std::size_t>(PyTuple_GET_SIZE(shape.ptr()));
  for (std::size_t d = 0; d < a.ndim; ++d) a.shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), d));
  r.contiguous = dense.ptr() == Py_True;
  if (r.contiguous) {
    dense_strides(a);
  } else {
    nb::object stride = nb::steal(PyObject_CallMethodNoArgs(t, c.s_stride.ptr()));
    if (!stride.is_valid() || !PyTuple_Check(stride.ptr()) || PyTuple_GET_SIZE(stride.ptr()) != Py_ssize_t(a.ndim))
      return PyErr_Clear(), false;
    for (std::size_t d = 0; d < a.ndim; ++d) a.stride[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(stride.ptr(), d));
  }
  a.ptr = PyLong_AsVoidPtr(ptr.ptr());
  a.dtype = described_dtype(code);
  const long index = PyLong_AsLong(dev.ptr());
  a.where = index < 0 ? device{nb::device::cpu::value, 0, true} : device{nb::device::cuda::value, int(index), true};
  if (PyErr_Occurred()) return PyErr_Clear(), false;
  a.found = a.writable = true;
  r.requires_grad = grad.ptr() == Py_True;
  r.passed = t;
  return true;
}

inline bool read_any(cache& c, kind k, nb::handle h, read_array& r) {
  if (k == kind::numpy) {
    if (Py_TYPE(h.ptr()) != c.ndarray || !read_buffer(h.ptr(), r.info)) return false;
    r.passed = h;
    return true;
  }
  return PyObject_TypeCheck(h.ptr(), c.tensor) && read_tensor(c, h.ptr(), r);
}

// A contiguous 1-D index array of one of the dtypes (codes as described_dtype's), on q's device or, for a CUDA
// call, on the host (the CUDA dispatch takes either), starting on its entries' alignment (a misaligned one, a numpy
// view at a byte offset, takes the Python path, which copies it: linea refuses it).
inline bool index_ok(const array_info& a, const device& on, int code_a, int code_b) {
  if (a.ndim != 1 || (a.shape[0] > 1 && a.stride[0] != 1)) return false;
  if (!dtype_is(a, described_dtype(code_a)) && !dtype_is(a, described_dtype(code_b))) return false;
  if (reinterpret_cast<std::uintptr_t>(a.ptr) % (a.dtype.bits / 8u) != 0) return false;
  return same_device(a.where, on) || a.where.cpu();
}

struct storage_of_call {
  const char* name;
  int code;  // described_dtype's code
};

// The storage type of q when the extension computes it as it is on this device; nullopt: the Python path.
inline std::optional<storage_of_call> storage_for(const array_info& q, bool cuda) {
  if (dtype_is(q, described_dtype(0))) return storage_of_call{"float32", 0};
  if (dtype_is(q, described_dtype(1)) && !cuda) return storage_of_call{"float64", 1};
  if (dtype_is(q, described_dtype(2)) && cuda) return storage_of_call{"bfloat16", 2};
  if (dtype_is(q, described_dtype(3)) && cuda) return storage_of_call{"float16", 3};
  return std::nullopt;
}

// An output: numpy.empty(shape, dtype); on the CPU for torch torch.from_numpy(numpy.empty(...)) (~1.0 against ~1.5
// µs for torch's allocation from Python; the tensor owns the array; float32 / float64 only, the CPU's storage
// types here); on CUDA like.new_empty(shape) with `like` a tensor of the output's dtype on q's device: q itself
// for o, a kept empty float32 tensor for the state (a dtype= keyword costs torch's argument parser ~1 µs more).
inline nb::object allocate(cache& c, kind k, nb::handle like, nb::handle shape, int code, bool cpu) {
  if (k == kind::numpy || cpu) {
    PyObject* args[] = {shape.ptr(), (code == 1 ? c.np_float64 : c.np_float32).ptr()};
    nb::object a = nb::steal(PyObject_Vectorcall(c.np_empty.ptr(), args, 2, nullptr));
    if (k == kind::numpy || !a.is_valid()) return a;
    PyObject* wrap[] = {a.ptr()};
    return nb::steal(PyObject_Vectorcall(c.from_numpy.ptr(), wrap, 1, nullptr));
  }
  PyObject* args[] = {like.ptr(), shape.ptr()};
  return nb::steal(PyObject_VectorcallMethod(c.s_new_empty.ptr(), args, 2, nullptr));  // self, shape
}

inline nb::object int_tuple(const std::int64_t (&dims)[4]) {
  nb::object t = nb::steal(PyTuple_New(4));
  for (Py_ssize_t i = 0; i < 4; ++i) PyTuple_SET_ITEM(t.ptr(), i, PyLong_FromLongLong(dims[i]));
  return t;
}

// An output allocated here (dense, on q's device), as the kernel call is given it: a numpy array read as any; a
// torch tensor described from what is known, only its data pointer read.
inline bool describe_output(cache& c, kind k, nb::handle out, const std::int64_t (&dims)[4], int code,
                            const device& on, read_array& r) {
  if (k == kind::numpy) return read_any(c, k, out, r);
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(out.ptr(), c.s_data_ptr.ptr()));
  if (!ptr.is_valid()) return PyErr_Clear(), false;
  array_info& a = r.info;
  a = array_info{};
  a.ptr = PyLong_AsVoidPtr(ptr.ptr());
  if (PyErr_Occurred()) return PyErr_Clear(), false;
  a.ndim = 4;
  for (int d = 0; d < 4; ++d) a.shape[d] = dims[d];
  dense_strides(a);
  a.dtype = described_dtype(code);
  a.where = on;
  a.found = a.writable = true;
  r.passed = out;
  return true;
}

// fla_forward(op, form, q, k, v, g, gk, beta, b, w, scale, initial_state, output_final_state, cu_seqlens,
//             qk_l2norm, beta_act, normalize, threads, linea_kw) -> (o, ht) | None
// form: 0 recurrent (fused_recurrent_*), 1 chunkwise (chunk_*). Gates not taken by the op are None.
inline nb::object forward(const char* op, int form, nb::handle q, nb::handle k, nb::handle v, nb::handle g,
                          nb::handle gk, nb::handle beta, nb::handle b, nb::handle w, nb::handle scale,
                          nb::handle initial_state, nb::handle output_final_state, nb::handle cu_seqlens,
                          nb::handle qk_l2norm, int beta_act, nb::handle normalize, int threads, nb::handle linea_kw) {
  cache& c = cache::get();
  const nb::object none = nb::none();
  // linea's keyword arguments: only the decode step's pool indices and the chunk size here.
  nb::handle state_indices;
  index_t chunk_size = 64;
  if (linea_kw.is_valid() && !linea_kw.is_none()) {
    if (!PyDict_Check(linea_kw.ptr())) return none;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(linea_kw.ptr(), &pos, &key, &value)) {
      const char* name = PyUnicode_AsUTF8(key);
      if (!name) return PyErr_Clear(), none;
      if (std::string_view(name) == "ssm_state_indices") {
        if (value != Py_None) state_indices = value;
      } else if (std::string_view(name) == "chunk_size" && PyLong_CheckExact(value)) {
        chunk_size = static_cast<index_t>(PyLong_AsLongLong(value));
        if (PyErr_Occurred()) return PyErr_Clear(), none;
      } else {
        return none;
      }
    }
  }
  const bool step = state_indices.is_valid();
  if (step && (form != 0 || initial_state.is_none())) return none;  // the Python path's errors

  kind kd;
  if (Py_TYPE(q.ptr()) == c.ndarray) kd = kind::numpy;
  else if (c.find_torch() && PyObject_TypeCheck(q.ptr(), c.tensor)) kd = kind::torch;
  else return none;

  // The arrays by linea's field names.
  struct named {
    int field;
    nb::handle h;
  };
  const named inputs[] = {{field("q"), q}, {field("k"), k}, {field("v"), v}, {field("g"), g}, {field("gk"), gk},
                          {field("beta"), beta}, {field("b"), b}, {field("w"), w}};
  read_array read[8];
  if (!read_any(c, kd, q, read[0])) return none;
  const device on = read[0].info.where;
  const bool cuda = !on.cpu();
  if (cuda && on.type != nb::device::cuda::value) return none;
  const auto st = storage_for(read[0].info, cuda);
  if (!st) return none;
  bool grads = read[0].requires_grad;
  for (int i = 1; i < 8; ++i) {
    if (i > 2 && inputs[i].h.is_none()) continue;  // a gate the op does not take (k, v: always read)
    if (!read_any(c, kd, inputs[i].h, read[i])) return none;
    const array_info& a = read[i].info;
    if (!dtype_is(a, read[0].info.dtype) || !same_device(a.where, on)) return none;
    grads = grads || read[i].requires_grad;
  }
  const int state_code = st->code == 1 ? 1 : 0;
  read_array h0, cu, idx;
  if (!initial_state.is_none()) {
    if (!read_any(c, kd, initial_state, h0) || !dtype_is(h0.info, described_dtype(state_code)) ||
        !same_device(h0.info.where, on))
      return none;
    grads = grads || h0.requires_grad;
  }
  if (!cu_seqlens.is_none() && (!read_any(c, kd, cu_seqlens, cu) || !index_ok(cu.info, on, 4, 5) ||
                                (!cuda && !cu.info.where.cpu())))
    return none;
  if (step && (!read_any(c, kd, state_indices, idx) || !index_ok(idx.info, on, 4, 4))) return none;
  if (grads) {  // autograd, where grad mode is on: the Python path
    nb::object on_ = nb::steal(PyObject_CallNoArgs(c.is_grad_enabled.ptr()));
    if (!on_.is_valid() || on_.ptr() != Py_False) return PyErr_Clear(), none;
  }

  options o;
  if (!scale.is_none()) {
    // (a truth value is an int to Python, but no scale: the Python path names it)
    if (!PyFloat_Check(scale.ptr()) && (!PyLong_Check(scale.ptr()) || PyBool_Check(scale.ptr()))) return none;
    o.scale = PyFloat_AsDouble(scale.ptr());
    if (PyErr_Occurred()) return PyErr_Clear(), none;
  }
  // Output shapes from q [B, T, H, K] and v [B, T, HV, V]; linea checks the rest.
  const array_info &aq = read[0].info, &av = read[2].info;
  if (aq.ndim != 4 || av.ndim != 4) return none;
  const std::int64_t B = aq.shape[0], T = aq.shape[1], K = aq.shape[3], HV = av.shape[2], V = av.shape[3];
  const std::int64_t N = cu_seqlens.is_none() ? B : cu.info.shape[0] - 1;
  if (N < 0) return none;  // an empty cu_seqlens: the Python path's error

  o.form = step ? "step" : form == 0 ? "recurrent" : "chunkwise";
  o.backend = cuda ? "cuda" : "cpu";
  o.dtype = st->name;
  const auto truth = [](nb::handle h) {  // Python's truth of a flag, as the Python path takes it
    const int t = PyObject_IsTrue(h.ptr());
    if (t < 0) throw nb::python_error();
    return t == 1;
  };
  o.qk_l2norm = truth(qk_l2norm), o.beta_act = beta_act, o.normalize = truth(normalize);
  const bool want_final = truth(output_final_state);
  o.chunk_size = chunk_size, o.threads = threads;
  if (cuda) {
    if (c.raw_stream.is_none()) return none;
    nb::object s = c.raw_stream(on.id);
    o.stream = static_cast<std::uintptr_t>(PyLong_AsUnsignedLongLong(s.ptr()));
    if (PyErr_Occurred()) return PyErr_Clear(), none;
  }

  const std::int64_t o_dims[4] = {B, T, HV, V}, h_dims[4] = {N, HV, K, V};
  const auto like = [&](int code) { return cuda ? c.like(q, aq, code) : q; };
  // o has v's shape: torch.empty_like(v) where v is a contiguous CUDA tensor of o's dtype on q's device (a
  // contiguous result; ~1 µs less than new_empty(shape), which parses a shape), new_empty otherwise.
  const bool like_v = cuda && kd == kind::torch && read[2].contiguous && dtype_is(av, described_dtype(st->code)) &&
                      same_device(av.where, on) && c.empty_like.is_valid();
  nb::object out = like_v ? nb::steal(PyObject_CallOneArg(c.empty_like.ptr(), v.ptr()))
                          : allocate(c, kd, like(st->code), int_tuple(o_dims), st->code, !cuda);
  if (!out.is_valid()) throw nb::python_error();
  read_array ro, rh;
  if (!describe_output(c, kd, out, o_dims, st->code, on, ro))
    throw nb::type_error("linea: could not read the output it allocated");
  nb::object ht = none;
  if (step) {
    if (want_final) ht = nb::borrow(initial_state);  // the pool, updated in place (fla's inplace_final_state)
  } else if (want_final) {
    ht = allocate(c, kd, like(state_code), int_tuple(h_dims), state_code, !cuda);
    if (!ht.is_valid()) throw nb::python_error();
    if (!describe_output(c, kd, ht, h_dims, state_code, on, rh))
      throw nb::type_error("linea: could not read the final state it allocated");
  }

  // The arrays by field, each with the description read above (the objects are held by the caller or here).
  named_arrays arrays;
  for (int i = 0; i < 8; ++i)
    if (!inputs[i].h.is_none()) arrays.set(inputs[i].field, read[i].passed, &read[i].info);
  if (!initial_state.is_none()) arrays.set(field("initial_state"), h0.passed, &h0.info);
  if (!cu_seqlens.is_none()) arrays.set(field("cu_seqlens"), cu.passed, &cu.info);
  if (step) {
    arrays.set(field("state_indices"), idx.passed, &idx.info);
    arrays.set(field("final_state"), h0.passed, &h0.info);
  }
  arrays.set(field("o"), ro.passed, &ro.info);
  if (!ht.is_none() && !step) arrays.set(field("final_state"), rh.passed, &rh.info);  // (the step's pool: set above)

  const bool known = all_rules::visit(op, [&]<class Rule>() { python::forward<Rule>(arrays, o); });
  if (!known) return none;
  return nb::steal(PyTuple_Pack(2, out.ptr(), ht.ptr()));
}

// The Python entry point of forward(): a METH_FASTCALL function taking its 19 arguments positionally, as
// python/linea/_ops.py passes them. nanobind's dispatch of this signature (named arguments that may be None) cost
// ~0.15 µs a call more than a plain C function (measured here); its exceptions become Python errors as nanobind's
// dispatch raises them, by the one translation both use (errors.hpp).
inline PyObject* forward_fastcall(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (n != 19) {
    PyErr_Format(PyExc_TypeError, "fla_forward() takes 19 positional arguments (%zd given)", n);
    return nullptr;
  }
  try {
    const char* op = PyUnicode_AsUTF8(args[0]);
    const int form = PyLong_AsLong(args[1]), beta_act = PyLong_AsLong(args[15]), threads = PyLong_AsLong(args[17]);
    if (!op || PyErr_Occurred()) return nullptr;
    const auto h = [&](int i) { return nb::handle(args[i]); };
    return forward(op, form, h(2), h(3), h(4), h(5), h(6), h(7), h(8), h(9), h(10), h(11), h(12), h(13), h(14),
                   beta_act, h(16), threads, h(18))
        .release()
        .ptr();
  } catch (...) {
    set_python_error();
  }
  return nullptr;
}

}  // namespace linea::python::fla
