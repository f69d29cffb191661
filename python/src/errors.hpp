// python/src/errors.hpp — C++ exceptions as Python errors, in one place for both ways into the extension:
// nanobind's dispatch (module.cpp registers linea's translator beside nanobind's own) and fla_forward, a plain
// METH_FASTCALL function that nanobind's dispatch does not wrap (fla_call.hpp).
#pragma once
#include <exception>
#include <new>

#include <nanobind/nanobind.h>

#include <linea/core/error.hpp>

namespace linea::python {

namespace nb = nanobind;

// Sets the Python error for the exception being handled; call it inside a catch block. linea::error (every bad
// argument; a std::runtime_error, which nanobind would raise as RuntimeError) becomes a ValueError carrying linea's
// message. The rest as nanobind's dispatch raises them: a Python error as it was set, nanobind's TypeError and
// ValueError as such, running out of memory as MemoryError, any other C++ exception as RuntimeError.
inline void set_python_error() noexcept {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    PyErr_SetString(e.type() == nb::exception_type::type_error    ? PyExc_TypeError
                    : e.type() == nb::exception_type::value_error ? PyExc_ValueError
                                                                  : PyExc_RuntimeError,
                    e.what());
  } catch (const linea::error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "linea: an unknown C++ exception");
  }
}

// nanobind's translator for linea::error (module.cpp): set_python_error's ValueError. Any other exception is
// rethrown, which hands it to nanobind's own translators.
inline void translate_linea_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const linea::error&) {
    set_python_error();
  }
}

}  // namespace linea::python
