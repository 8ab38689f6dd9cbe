// Helpers shared by the markov tests.
#ifndef ATTNMECH_TESTS_MARKOV_UTIL_H
#define ATTNMECH_TESTS_MARKOV_UTIL_H

#include "markov_core.h"

#include <string>
#include <vector>

namespace markov_test {

struct Ctx {
  am_context *ctx = nullptr;
  Ctx() { am_context_create(&ctx, nullptr); }
  ~Ctx() { am_context_destroy(&ctx); }
  operator am_context *() const { return ctx; }
  const char *err() const { return am_context_last_error(ctx); }
};

struct Rec {
  am_record *r = nullptr;
  Rec() { am_record_create(&r); }
  ~Rec() { am_record_destroy(&r); }
  operator am_record *() const { return r; }
};

inline am_head bilinear(const std::vector<double> &W) {
  am_head h{};
  h.form = AM_HEAD_BILINEAR;
  h.W = W.data();
  return h;
}

// Example μ of a split as the N0×S column-major matrix (pointer into the C-order [P, S, N0] buffer).
inline const double *example(const am_markov::Options &o, const am_markov::Split &s, size_t mu) {
  return s.X.data() + mu * am_markov::tokens(o) * am_markov::input_dim(o);
}

}  // namespace markov_test

#endif
