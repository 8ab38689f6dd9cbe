// The Q/K-form fixture (tests/data/npy/qk): values, dtype/order conversions, and the Q/K orientation —
// a Q/K head must give the same ξ as the bilinear head W = Kᵀ Q / √G built from the fixture's formulas.
#include <doctest/doctest.h>

#include "npy_test_util.h"

#include <cstdlib>
#include <functional>

using namespace npy_test;

#ifndef AM_TESTS_DATA_DIR
#error "AM_TESTS_DATA_DIR must be defined by the build"
#endif

namespace {

constexpr size_t P = 6, S = 3, N0 = 4, G = 2;

std::vector<double> c_array(const am_record *obj, const char *key, std::vector<size_t> *shape) {
  am_array_view v;
  REQUIRE(am_record_get_array(obj, key, &v) == AM_OK);
  shape->assign(v.shape, v.shape + v.ndim);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  return out;
}

// Q/K of head (l, h) from the README formulas, C order [g][j]; f32 heads rounded like the file.
void formula_qk(int l, int h, std::vector<double> &Q, std::vector<double> &K) {
  Q.assign(G * N0, 0.0);
  K.assign(G * N0, 0.0);
  for (size_t g = 0; g < G; ++g)
    for (size_t j = 0; j < N0; ++j) {
      const double dg = double(g), dj = double(j);
      double q = 0, k = 0;
      if (l == 1) q = std::sin(1 + dg + 0.5 * dj), k = std::cos(2 - dg + 0.3 * dj);
      if (l == 2 && h == 1)
        q = double(float(std::sin(0.5 + 0.7 * dg - 0.4 * dj))), k = double(float(std::cos(0.1 + 0.2 * dg + 0.9 * dj)));
      if (l == 2 && h == 2) q = std::sin(-1 + 0.3 * dg + 0.8 * dj), k = std::cos(1.5 - 0.6 * dg - 0.2 * dj);
      Q[g * N0 + j] = q;
      K[g * N0 + j] = k;
    }
}

struct FreeDel {
  double *p = nullptr;
  ~FreeDel() { am_free(p); }
};

}  // namespace

TEST_CASE("npy qk fixture: values, conversions and Q/K orientation") {
  const std::string dir = std::string(AM_TESTS_DATA_DIR) + "/npy/qk";
  Ctx ctx;
  Rec ds, ex;
  REQUIRE_MESSAGE(am::npy_task::load_problem(ctx, dir.c_str(), ds, ex) == AM_OK, ctx.err());
  CHECK(ctx.warnings.empty());

  std::vector<size_t> shape;
  const std::vector<double> X = c_array(ds, "X_train", &shape);
  CHECK(shape == std::vector<size_t>{P, S, N0});
  for (size_t m = 0; m < P; ++m)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i) CHECK(X[(m * S + s) * N0 + i] == std::cos(0.3 * m + 0.5 * s + 0.7 * i));
  const std::vector<double> Xt = c_array(ds, "X_test", &shape);  // stored in Fortran order in the file
  CHECK(shape == std::vector<size_t>{2, S, N0});
  for (size_t m = 0; m < 2; ++m)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i)
        CHECK(Xt[(m * S + s) * N0 + i] == std::cos(0.3 * (m + 6.5) + 0.5 * s + 0.7 * i));
  const std::vector<double> y = c_array(ds, "y_train", &shape);  // int64 in the file
  CHECK(y == std::vector<double>{1, -1, 1, -1, 1, -1});
  const am_record *att = am_record_get(ds, "attention");
  REQUIRE(am_record_size(att) == 3);
  for (int l = 1, k = 0; l <= 2; ++l)
    for (int h = 1; h <= (l == 1 ? 1 : 2); ++h, ++k) {
      const std::string key = "l" + std::to_string(l) + "_h" + std::to_string(h);
      CAPTURE(key);
      const am_record *head = am_record_get(att, key.c_str());
      REQUIRE(am_record_type_of(head) == AM_REC_OBJECT);
      std::vector<double> Qf, Kf;
      formula_qk(l, h, Qf, Kf);
      CHECK(c_array(head, "Q", &shape) == Qf);
      CHECK(shape == std::vector<size_t>{G, N0});
      CHECK(c_array(head, "K", &shape) == Kf);
    }

  // the same problem in bilinear form, W = Kᵀ Q / √G from the formulas (Q on the query side)
  am_record *bil = nullptr;
  REQUIRE(am_record_clone(ds, &bil) == AM_OK);
  am_record_remove(bil, "attention");
  am_record *batt = am_record_object(bil, "attention");
  for (int l = 1; l <= 2; ++l)
    for (int h = 1; h <= (l == 1 ? 1 : 2); ++h) {
      std::vector<double> Qf, Kf, W(N0 * N0, 0.0);  // column-major W(i,j)
      formula_qk(l, h, Qf, Kf);
      for (size_t j = 0; j < N0; ++j)
        for (size_t i = 0; i < N0; ++i)
          for (size_t g = 0; g < G; ++g) W[i + N0 * j] += Kf[g * N0 + i] * Qf[g * N0 + j] / std::sqrt(double(G));
      const std::string key = "l" + std::to_string(l) + "_h" + std::to_string(h);
      REQUIRE(am_record_set_matrix(batt, key.c_str(), W.data(), N0, N0, N0) == AM_OK);
    }
  FreeDel xa, xb;
  size_t Pa = 0, Pb = 0, Na = 0, Nb = 0;
  REQUIRE_MESSAGE(am_dataset_xi(ctx, ds, "test", &xa.p, &Pa, &Na, nullptr) == AM_OK, ctx.err());
  REQUIRE_MESSAGE(am_dataset_xi(ctx, bil, "test", &xb.p, &Pb, &Nb, nullptr) == AM_OK, ctx.err());
  am_record_destroy(&bil);
  REQUIRE(Pa == Pb);
  REQUIRE(Na == Nb);
  for (size_t k = 0; k < Pa * Na * 2; ++k) CHECK(xa.p[k] == doctest::Approx(xb.p[k]).epsilon(1e-12));  // round-off
  // and the swapped orientation (W = Qᵀ K / √G) is really different, so the check above has teeth
  std::vector<double> Qf, Kf;
  formula_qk(1, 1, Qf, Kf);
  double asym = 0;
  for (size_t i = 0; i < N0; ++i)
    for (size_t j = 0; j < N0; ++j) {
      double a = 0, b = 0;
      for (size_t g = 0; g < G; ++g) a += Kf[g * N0 + i] * Qf[g * N0 + j], b += Kf[g * N0 + j] * Qf[g * N0 + i];
      asym = std::fmax(asym, std::fabs(a - b));
    }
  CHECK(asym > 0.1);
}

#ifdef AM_NPY_PLUGIN_PATH
// Through the plugin ABI: `dir` is required (usage error), then the fixture loads.
TEST_CASE("npy plugin module: dir required, fixture loads through the C entry") {
  Ctx ctx;
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE_MESSAGE(am_registry_load_file(ctx, reg, AM_NPY_PLUGIN_PATH) == AM_OK, ctx.err());
  const am_plugin_desc *d = am_registry_find(reg, "npy", AM_PLUGIN_TASK);
  REQUIRE(d);
  CHECK(d->data_kinds == AM_DATA_ATTENTION);
  am_host host{};
  host.struct_size = sizeof host;
  host.ctx = ctx;
  host.seed = 1;
  host.rng_stream = 0;
  void *inst = nullptr;
  {
    const char *nk[1] = {nullptr}, *nv[1] = {nullptr};
    int nu[1] = {0};
    Rec params;
    REQUIRE_MESSAGE(am_params_parse(ctx, d, 0, nk, nv, nu, params) == AM_OK, ctx.err());
    host.params = params;
    CHECK(d->create(&host, &inst) == AM_ERR_USAGE);
    CHECK(ctx.err().find("'dir' is required") != std::string::npos);
  }
  const std::string dir = std::string(AM_TESTS_DATA_DIR) + "/npy/qk";
  const char *keys[] = {"dir"};
  const char *vals[] = {dir.c_str()};
  int used[1] = {0};
  Rec params;
  REQUIRE_MESSAGE(am_params_parse(ctx, d, 1, keys, vals, used, params) == AM_OK, ctx.err());
  CHECK(used[0] == 1);
  host.params = params;
  REQUIRE_MESSAGE(d->create(&host, &inst) == AM_OK, ctx.err());
  Rec ds, ex;
  CHECK_MESSAGE(d->make_dataset(inst, ds, ex) == AM_OK, ctx.err());
  d->destroy(inst);
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE_MESSAGE(am_dataset_arch(ctx, ds, &arch, &T) == AM_OK, ctx.err());
  CHECK(am_arch_paths(&arch) == 2);
  CHECK(T == 0.05);
  am_registry_destroy(&reg);
}
#endif
