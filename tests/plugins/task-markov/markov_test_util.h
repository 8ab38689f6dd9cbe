// Helpers shared by the markov tests.
#ifndef ATTNMECH_TESTS_MARKOV_UTIL_H
#define ATTNMECH_TESTS_MARKOV_UTIL_H

#include "markov_core.h"
#include "estimate.hpp"

#include <attnmech/plugin.hpp>

#include <cmath>
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
  h.struct_size = sizeof h;
  h.form = AM_HEAD_BILINEAR;
  h.W = W.data();
  return h;
}

// Example μ of a split as the N0×S column-major matrix (pointer into the C-order [P, S, N0] buffer).
inline const double *example(const am::markov::Options &o, const am::markov::Split &s, size_t mu) {
  return s.X.data() + mu * am::markov::tokens(o) * am::markov::input_dim(o);
}

// GP-limit test predictions of the sub-network `name` of the dataset's path_subsets, from the theory
// estimator (run.gp_subsets); NaN accuracy when the subset is absent.
inline double gp_subset_accuracy(am_context *ctx, const am_record *ds, const char *name,
                                 std::vector<double> *mean = nullptr) {
  am::attention::Options opt;
  opt.alignment_k = 0;
  am_record *run = nullptr;
  am_record_create(&run);
  double acc = std::nan("");
  if (am::attention::estimate(ctx, ds, am::sdk::make_record().get(), opt, run) >= 0) {
    const am_record *subs = am_record_get(run, "gp_subsets");
    for (size_t i = 0; i < am_record_size(subs); ++i) {
      const am_record *e = am_record_at(subs, i);
      const char *nm = am_record_string(am_record_get(e, "name"));
      if (!nm || std::string(nm) != name) continue;
      const am_record *t = am_record_get(e, "test");
      acc = am_record_number(am_record_get(t, "accuracy"));
      size_t n = 0;
      if (mean && am_record_get_vector(t, "mean", nullptr, 0, &n) >= AM_ERR_BUFFER_TOO_SMALL) {
        mean->resize(n);
        am_record_get_vector(t, "mean", mean->data(), n, &n);
      }
    }
  }
  am_record_destroy(&run);
  return acc;
}

// The reference for gp_subsets: the GP-limit test predictions of a network built on its own (its own heads,
// H_tot and ξ through am_xi), as the task computed them before the subsets moved to the estimator.
inline am_status standalone_gp(am_context *ctx, const am::markov::Options &o, const am::markov::Network &net,
                               const am_rng &heads_rng, const am::markov::Split &train, const am::markov::Split &test,
                               std::vector<double> *mean, double *accuracy) {
  const am::markov::HeadMatrices hm = am::markov::build_network_heads(o, net, heads_rng);
  am_arch arch;
  am_status st = am::markov::network_arch(ctx, o, net, o.widths_scan[0], &arch);
  if (st != AM_OK) return st;
  const size_t N0 = am::markov::input_dim(o), S = am::markov::tokens(o), H = am_arch_paths(&arch);
  std::vector<am_head> heads;
  for (const auto &W : hm.W) heads.push_back(bilinear(W));
  std::vector<double> xi_train(train.P * N0 * H), xi_test(test.P * N0 * H);
  if ((st = am_xi(ctx, &arch, heads.data(), AM_READOUT_LAST, train.P, N0, S, train.X.data(), xi_train.data())) ||
      (st = am_xi(ctx, &arch, heads.data(), AM_READOUT_LAST, test.P, N0, S, test.X.data(), xi_test.data())))
    return st;
  am_theory *th = nullptr;
  if ((st = am_theory_create(ctx, &th, &arch, train.P, N0, xi_train.data(), train.y.data(), o.temperature))) return st;
  std::vector<double> U(am_theory_u_size(th)), var(test.P);
  mean->assign(test.P, 0.0);
  am_theory_gp_point(th, U.data());
  st = am_theory_predict(ctx, th, U.data(), test.P, xi_test.data(), mean->data(), var.data());
  am_theory_destroy(&th);
  *accuracy = am_accuracy(mean->data(), test.y.data(), test.P);
  return st;
}

}  // namespace markov_test

#endif
