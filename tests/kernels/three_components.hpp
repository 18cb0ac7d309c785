// The CPU kernel tests' small model: three gaussian_diag components over two columns, with
// different weights, means and variances.
#pragma once

#include <mixle/model.hpp>

namespace mixle::test {

inline Model three_components() {
  Model m;
  m.weights = {0.2, 0.5, 0.3};
  Part g;
  g.family = Family::gaussian_diag;
  g.col_begin = 0;
  g.col_end = 2;
  g.mean = {0, 0, 3, 1, -2, 4};
  g.var = {1, 2, 0.5, 1, 2, 1};
  m.parts = {g};
  return m;
}

}  // namespace mixle::test
