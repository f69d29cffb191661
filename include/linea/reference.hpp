// linea/reference.hpp — the float64 oracle alone: views, arguments, the write rules, the read policies, the
// reference recurrence (forward) and its backward. Needs only the standard library (no Eigen, xsimd or threads):
//
//   #include <linea/reference.hpp>                    // g++ -std=c++20 -Ipath/to/linea/include app.cpp
//   linea::arguments<double> a{.q = q, .k = k, .v = v, .g = g, .beta = beta, .o = o};
//   linea::reference::recurrent<linea::gated_delta>(a);
//   linea::reference::backward<linea::gated_delta>(a, gradients);
//
// The fast forms (linea::recurrent / chunkwise / step) are in <linea/linea.hpp>.
#pragma once

#include "config.hpp"
#include "core/arguments.hpp"
#include "core/error.hpp"
#include "core/gradients.hpp"
#include "core/storage.hpp"
#include "core/validate.hpp"
#include "core/view.hpp"
#include "tensor.hpp"  // linea::tensor, the owning tensor of the tests and examples

#include "rules/list.hpp"

#include "read/identity.hpp"
#include "read/ccq.hpp"

#include "reference/backward.hpp"
#include "reference/recurrence.hpp"
#include "reference/softmax.hpp"
