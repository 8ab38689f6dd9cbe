// The estimator run as the host drives it: params parsed against the plugin's own table
// (am_params_parse, then bound to the options as the SDK does), run() filling the run record under the SDK's
// exception → status mapper; record keys of docs/replica.md.
#include <doctest/doctest.h>

#include "params.h"
#include "replica.h"

#include <attnmech/array.h>
#include <attnmech/context.h>
#include <attnmech/record.h>
#include <attnmech/registry.h>  // am_params_parse (the host library)

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using namespace am::replica;

namespace {

am_plugin_desc test_desc() {
  am_plugin_desc d{};
  d.abi_version = AM_ABI_VERSION;
  d.struct_size = sizeof(am_plugin_desc);
  d.kind = AM_PLUGIN_ESTIMATOR;
  d.name = "replica";
  d.version = "test";
  d.description = "test";
  d.params = &kParams[0].def;  // rows of the SDK table (stride: kParams[0].def.struct_size)
  d.n_params = kNumParams;
  d.data_kinds = AM_DATA_NONE;
  return d;
}

struct Run {
  am_context *ctx = nullptr;
  am_record *params = nullptr;
  am_record *out = nullptr;
  am_status st = AM_OK;
  std::string error;

  explicit Run(std::vector<std::pair<std::string, std::string>> kv) {
    REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
    REQUIRE(am_record_create(&params) == AM_OK);
    REQUIRE(am_record_create(&out) == AM_OK);
    std::vector<const char *> keys, vals;
    for (auto &p : kv) {
      keys.push_back(p.first.c_str());
      vals.push_back(p.second.c_str());
    }
    std::vector<int> consumed(kv.size(), 0);
    const am_plugin_desc d = test_desc();
    REQUIRE(am_params_parse(ctx, &d, kv.size(), keys.data(), vals.data(), consumed.data(), params) == AM_OK);
    for (int c : consumed) REQUIRE(c == 1);
    am_host host;
    am_host_init(&host, ctx, params, 17, 3, 1);
    Options opt;
    am::sdk::parse(kParams, params, &opt);  // what the SDK's create does with the host's params
    st = am::sdk::guard(ctx, nullptr, [&] { return run(am::sdk::Host(&host), opt, out); });
    error = am_context_last_error(ctx);
  }
  ~Run() {
    am_record_destroy(&out);
    am_record_destroy(&params);
    am_context_destroy(&ctx);
  }
};

std::vector<double> vec(const am_record *obj, const char *key) {
  size_t n = 0;
  REQUIRE(am_record_get_vector(obj, key, nullptr, 0, &n) == AM_OK);
  std::vector<double> v(n);
  REQUIRE(am_record_get_vector(obj, key, v.data(), n, &n) == AM_OK);
  return v;
}

double num(const am_record *obj, const char *key) {
  double v = NAN;
  REQUIRE(am_record_get_number(obj, key, &v) == AM_OK);
  return v;
}

std::string str(const am_record *obj, const char *key) {
  const char *s = nullptr;
  REQUIRE(am_record_get_string(obj, key, &s) == AM_OK);
  return s;
}

std::string temp_path(const char *name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/am_replica_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace

TEST_CASE("plugin run: the issue's example command, curves in user order") {
  Run r({{"model", "R1"}, {"nu", "3"}, {"lambda", "1e-3,1e-2,1e-1,1"}, {"alpha", "0.1,0.5,1,2,10"}});
  REQUIRE(r.st == AM_OK);
  const am_record *curves = am_record_get(r.out, "curves");
  REQUIRE(curves);
  REQUIRE(am_record_type_of(curves) == AM_REC_LIST);
  REQUIRE(am_record_size(curves) == 4);
  const double lams[4] = {1e-3, 1e-2, 1e-1, 1};
  const std::vector<double> al = {0.1, 0.5, 1, 2, 10};
  auto sp = make_r1(3.0);
  for (size_t k = 0; k < 4; ++k) {
    const am_record *c = am_record_at(curves, k);
    CHECK(str(c, "model") == "R1");
    CHECK(num(c, "nu") == 3.0);
    CHECK(num(c, "lambda") == lams[k]);  // a number, not a list
    CHECK(vec(c, "alpha") == al);        // user order
    const std::vector<double> eps = vec(c, "test_loss");
    REQUIRE(eps.size() == al.size());
    for (size_t i = 0; i < al.size(); ++i) CHECK(eps[i] == doctest::Approx(solve(*sp, al[i], lams[k], {}).eps).epsilon(1e-12));
    CHECK(num(c, "bayes_loss") == doctest::Approx(1.0 / 3.0).epsilon(1e-15));
    CHECK(am_record_get(c, "sim_test_loss") == nullptr);  // no simulation requested
  }
  // Table 4.5 cells through the whole path (lambda = 1e-2, alpha = 0.5 and 2).
  CHECK(std::fabs(vec(am_record_at(curves, 1), "test_loss")[1] - 0.6731) <= 1e-4);
  CHECK(std::fabs(vec(am_record_at(curves, 1), "test_loss")[3] - 0.6040) <= 1e-4);

  const am_record *opt = am_record_get(r.out, "optimal");
  REQUIRE(am_record_size(opt) == 1);
  const am_record *o = am_record_at(opt, 0);
  const std::vector<double> lo = vec(o, "lambda_opt"), eo = vec(o, "test_loss_opt"), r0 = vec(o, "test_loss_ridgeless");
  REQUIRE(lo.size() == 5);
  // table 4.5, 3 significant figures: within half a unit of the last (0.05), plus Brent's location tolerance in
  // u = log λ (√ε·|u| + 1e-10/3, ~5e-8 in u, ~1e-6 in λ)
  CHECK(std::fabs(lo[0] - 22.6) <= 0.05 + 1e-6);
  CHECK(std::fabs(eo[3] - 0.3690) <= 1e-4);
  CHECK(std::isinf(r0[2]));                              // alpha = 1, lambda -> 0
  CHECK(r0[3] == doctest::Approx(2.0 / 3.0).epsilon(1e-12));

  const am_record *pk = am_record_get(r.out, "peaks");
  REQUIRE(am_record_size(pk) == 4);
  // table 4.5, 3 decimals: half a unit of the last (the peak search is located to ~1e-8)
  CHECK(std::fabs(num(am_record_at(pk, 1), "alpha_star") - 0.961) <= 5e-4 + 1e-6);
  CHECK(std::fabs(num(am_record_at(pk, 1), "height") - 1.166) <= 5e-4 + 1e-6);

  const am_record *lc = am_record_get(r.out, "lambda_curves");
  REQUIRE(am_record_size(lc) == 1);
  am_array_view v;
  REQUIRE(am_record_get_array(am_record_at(lc, 0), "test_loss", &v) == AM_OK);
  CHECK(v.ndim == 2);
  CHECK(v.shape[0] == 5);
  CHECK(v.shape[1] == vec(am_record_at(lc, 0), "lambda").size());
  CHECK(am_record_get(r.out, "potts_panel") == nullptr);
}

TEST_CASE("plugin run: simulations, R2 defaults derived from nu, potts hook") {
  Run r({{"model", "R2"},
         {"nu", "3,4"},
         {"lambda", "0.1"},
         {"alpha", "2,0.5"},
         {"sim_L", "30"},
         {"sim_seeds", "2"},
         {"sim_sites", "5"},
         {"optimal", "false"}});
  REQUIRE(r.st == AM_OK);
  const am_record *curves = am_record_get(r.out, "curves");
  REQUIRE(am_record_size(curves) == 2);
  for (size_t k = 0; k < 2; ++k) {
    const am_record *c = am_record_at(curves, k);
    const double nu = num(c, "nu");
    CHECK(nu == (k == 0 ? 3.0 : 4.0));
    CHECK(num(c, "bayes_loss") == doctest::Approx(1.0 / nu).epsilon(1e-15));  // sigma2 = 1/nu
    CHECK(num(c, "rho") == doctest::Approx(r1_rho(nu)).epsilon(1e-15));       // the R1 signal power
    const std::vector<double> ar = vec(c, "sim_alpha_realised"), sm = vec(c, "sim_test_loss"), se = vec(c, "sim_stderr");
    REQUIRE(ar.size() == 2);
    CHECK(ar[0] == doctest::Approx(58.0 / 29.0).epsilon(1e-15));
    CHECK(ar[1] == doctest::Approx(15.0 / 29.0).epsilon(1e-15));  // round(14.5) = 15
    CHECK(sm.size() == 2);
    CHECK(se.size() == 2);
    CHECK(se[0] > 0);
    CHECK(num(c, "sim_L") == 30);
  }
  // R2's optimal lambda would be sigma2/(alpha rho); optimal=false leaves it out.
  CHECK(am_record_get(am_record_at(am_record_get(r.out, "optimal"), 0), "lambda_opt") == nullptr);
}

TEST_CASE("plugin run: the discrete right panel fits factored attention on Potts data") {
  // Two realisations (each: one draw of J, U checked for equilibration with 1000 chains, its sequences and the fits;
  // about 4 s each, the cost of this test).
  Run r({{"alpha", "1"}, {"potts_alpha", "1,10"}, {"potts_M_test", "300"}, {"potts_realisations", "2"}});
  REQUIRE(r.st == AM_OK);
  const am_record *pp = am_record_get(r.out, "potts_panel");
  REQUIRE(pp);
#ifdef AM_REPLICA_WITH_POTTS
  CHECK(str(pp, "status") == "done");
  CHECK(vec(pp, "M") == std::vector<double>{20, 200});  // M = round(alpha L), L = 20
  CHECK(num(pp, "realisations") == 2);
  CHECK(num(pp, "stop_tol") == 0);  // fitted to the minimiser by default
  const std::vector<double> loss = vec(pp, "test_loss"), eps = vec(pp, "epsilon_star"), se = vec(pp, "test_loss_stderr"),
                            all = vec(pp, "test_loss_realisations");
  REQUIRE(loss.size() == 2);
  REQUIRE(se.size() == 2);
  REQUIRE(all.size() == 4);  // [realisation, alpha], read in C order: all[2 r + k]
  for (size_t k = 0; k < 2; ++k) {
    CHECK(all[2 + k] != all[k]);  // independent draws
    // the mean and, for two values, the standard error |a - b| / 2 (sample sd / sqrt 2); 1e-15 / 1e-12: rounding
    CHECK(loss[k] == doctest::Approx(0.5 * (all[k] + all[2 + k])).epsilon(1e-15));
    CHECK(se[k] == doctest::Approx(0.5 * std::fabs(all[k] - all[2 + k])).epsilon(1e-12));
  }
  // ten times more data must bring each realisation's test loss down towards (never below, beyond the sampling
  // error of 300 test sequences, ~0.03) the conditional entropy eps*
  for (size_t q = 0; q < 2; ++q) CHECK(all[2 * q + 1] < all[2 * q]);
  CHECK(loss[1] > eps[1] - 0.05);
  // the peak of the mean curve: here at the first (smallest) alpha, so not interior
  const am_record *pk = am_record_get(pp, "peak");
  REQUIRE(pk);
  CHECK(num(pk, "alpha") == 1);
  CHECK(num(pk, "height") == loss[0]);
  CHECK(num(pk, "height_stderr") == se[0]);
  CHECK(am_record_bool(am_record_get(pk, "interior")) == 0);
#else
  CHECK(str(pp, "status") == "pending");
#endif
}


TEST_CASE("plugin run: finite model from J and from Sigma (.npy)") {
  const size_t L = 24;
  std::vector<double> J(L * L);
  am_rng rng;
  am_rng_init(&rng, 5, 0);
  draw_r1_J(L, &rng, J.data());
  const std::string jpath = temp_path("J.npy"), spath = temp_path("Sigma.npy");
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = v.shape[1] = L;
  v.fortran_order = 1;
  v.data = J.data();
  REQUIRE(am_npy_write(nullptr, jpath.c_str(), &v) == AM_OK);
  std::vector<double> S(L * L, 0.0);
  for (size_t i = 0; i < L; ++i) S[i + i * L] = 1.0 + static_cast<double>(i % 3);
  v.data = S.data();
  REQUIRE(am_npy_write(nullptr, spath.c_str(), &v) == AM_OK);
  {
    Run r({{"model", "finite"}, {"J", jpath}, {"nu", "3"}, {"lambda", "0.05"}, {"alpha", "0.5,3"}, {"optimal", "no"}});
    REQUIRE(r.st == AM_OK);
    const am_record *c = am_record_at(am_record_get(r.out, "curves"), 0);
    CHECK(str(c, "source") == "J");
    auto fin = make_discrete(finite_measure_from_J(J.data(), L, 3.0));
    const std::vector<double> eps = vec(c, "test_loss");
    CHECK(eps[0] == doctest::Approx(solve(*fin, 0.5, 0.05, {}).eps).epsilon(1e-12));
    CHECK(eps[1] == doctest::Approx(solve(*fin, 3.0, 0.05, {}).eps).epsilon(1e-12));
  }
  {
    Run r({{"model", "finite"}, {"Sigma", spath}, {"sigma2", "0.2"}, {"rho", "0.7"}, {"lambda", "0.05"},
           {"alpha", "0.5,3"}, {"sim_L", "1"}, {"sim_seeds", "2"}, {"optimal", "no"}});
    REQUIRE(r.st == AM_OK);
    const am_record *c = am_record_at(am_record_get(r.out, "curves"), 0);
    CHECK(str(c, "source") == "Sigma");
    CHECK(num(c, "bayes_loss") == 0.2);
    auto sd = make_discrete(measure_from_sigma(S.data(), L, 0.7, 0.2));
    CHECK(vec(c, "test_loss")[1] == doctest::Approx(solve(*sd, 3.0, 0.05, {}).eps).epsilon(1e-12));
    CHECK(vec(c, "sim_alpha_realised")[1] == doctest::Approx(3.0).epsilon(1e-15));  // p = 24: M = 72
  }
  // nu too small for this J: a domain error naming the problem.
  {
    Run r({{"model", "finite"}, {"J", jpath}, {"nu", "1"}, {"lambda", "0.1"}, {"alpha", "2"}});
    CHECK(r.st == AM_ERR_DOMAIN);
    CHECK(r.error.find("largest eigenvalue") != std::string::npos);
  }
  std::remove(jpath.c_str());
  std::remove(spath.c_str());
}

TEST_CASE("plugin run: usage errors") {
  {
    Run r(std::vector<std::pair<std::string, std::string>>{{"model", "finite"}});
    CHECK(r.st == AM_ERR_USAGE);
    CHECK(r.error.find("J=") != std::string::npos);
  }
  {
    Run r({{"model", "R1"}, {"nu", "2"}});
    CHECK(r.st == AM_ERR_DOMAIN);
    CHECK(r.error.find("nu > 2") != std::string::npos);
  }
  {
    Run r({{"model", "finite"}, {"J", "/nonexistent/J.npy"}});
    CHECK(r.st < 0);
    CHECK(r.error.find("J") != std::string::npos);
  }
}

TEST_CASE("the am-replica module through the registry (thin entry, descriptor, create/estimate/destroy)") {
  if (!std::getenv("AM_PLUGIN_PATH")) {
    MESSAGE("AM_PLUGIN_PATH not set (run through meson test): module test skipped");
    return;
  }
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  am_registry_discover(ctx, reg, nullptr);
  const am_plugin_desc *d = am_registry_find(reg, "replica", AM_PLUGIN_ESTIMATOR);
  REQUIRE(d != nullptr);
  CHECK(d->abi_version == AM_ABI_VERSION);
  CHECK(d->data_kinds == AM_DATA_NONE);
  CHECK(d->n_params == kNumParams);
  CHECK((d->make_dataset == nullptr));
  REQUIRE((d->estimate != nullptr));
  am_record *params = nullptr, *out = nullptr;
  REQUIRE(am_record_create(&params) == AM_OK);
  REQUIRE(am_record_create(&out) == AM_OK);
  const char *keys[] = {"lambda", "alpha"};
  const char *vals[] = {"0.1", "2"};
  int consumed[2] = {0, 0};
  REQUIRE(am_params_parse(ctx, d, 2, keys, vals, consumed, params) == AM_OK);
  am_host host{};
  host.struct_size = sizeof(am_host);
  host.ctx = ctx;
  host.params = params;
  host.seed = 0;
  host.rng_stream = 0;
  void *inst = nullptr;
  REQUIRE(d->create(&host, &inst) == AM_OK);
  am_record *inputs = nullptr;
  REQUIRE(am_record_create(&inputs) == AM_OK);
  CHECK(d->estimate(inst, nullptr, inputs, out) == AM_OK);
  am_record_destroy(&inputs);
  d->destroy(inst);
  const am_record *c = am_record_at(am_record_get(out, "curves"), 0);
  REQUIRE(c);
  CHECK(std::fabs(vec(c, "test_loss")[0] - 0.4447) <= 1e-4);  // table 4.5: lambda = 0.1, alpha = 2
  am_record_destroy(&out);
  am_record_destroy(&params);
  am_registry_destroy(&reg);
  am_context_destroy(&ctx);
}
