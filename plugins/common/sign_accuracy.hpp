// attnmech — classification accuracy of a trained network's outputs with sign(0) counted as a half (header
// only): the convention of the oneshot task's GD network and of the pruning evaluation (a network whose whole
// layer is pruned outputs f = 0 and scores 1/2). The theory's predictor uses am_accuracy (sign(0) wrong).
#ifndef ATTNMECH_SIGN_ACCURACY_HPP
#define ATTNMECH_SIGN_ACCURACY_HPP

#include <cstddef>

namespace am::common {

inline double sign_accuracy(const double *f, const double *y, size_t n) {
  if (n == 0) return 0;
  double ok = 0;
  for (size_t i = 0; i < n; ++i) ok += f[i] * y[i] > 0 ? 1.0 : f[i] == 0 ? 0.5 : 0.0;
  return ok / double(n);
}

}  // namespace am::common

#endif
