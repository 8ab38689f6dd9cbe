// The dataset record of the markov task (dataset.h keys) and the GP limits of its path subsets (computed by
// the theory estimator), checked against the sub-networks built on their own and against an independent slow
// implementation of the single-path GP predictor.
#include <doctest/doctest.h>

#include "markov_test_util.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace am::markov;
using markov_test::Ctx;
using markov_test::Rec;

namespace {

std::vector<double> numbers(const am_record *list) {
  std::vector<double> v;
  for (size_t i = 0; i < am_record_size(list); ++i) v.push_back(am_record_number(am_record_at(list, i)));
  return v;
}

std::vector<double> array_c(const am_record *obj, const char *key, std::vector<size_t> *shape) {
  am_array_view v;
  REQUIRE(am_record_get_array(obj, key, &v) == AM_OK);
  shape->assign(v.shape, v.shape + v.ndim);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  return out;
}

// Column softmax over keys of x_sᵀ W x_t, written with plain loops (independent of the core).
void slow_attention(const std::vector<double> &W, const double *X, size_t N0, size_t S, std::vector<double> &Om) {
  std::vector<double> WX(N0 * S, 0.0);
  for (size_t t = 0; t < S; ++t)
    for (size_t j = 0; j < N0; ++j) {
      const double x = X[j + N0 * t];
      if (x == 0.0) continue;
      for (size_t i = 0; i < N0; ++i) WX[i + N0 * t] += W[i + N0 * j] * x;
    }
  Om.assign(S * S, 0.0);
  for (size_t t = 0; t < S; ++t) {
    double mx = -1e300;
    for (size_t s = 0; s < S; ++s) {
      double l = 0;
      for (size_t i = 0; i < N0; ++i) l += X[i + N0 * s] * WX[i + N0 * t];
      Om[s + S * t] = l;
      mx = std::fmax(mx, l);
    }
    double z = 0;
    for (size_t s = 0; s < S; ++s) z += (Om[s + S * t] = std::exp(Om[s + S * t] - mx));
    for (size_t s = 0; s < S; ++s) Om[s + S * t] /= z;
  }
}

// ξ of the good path (same_token → uniform, last-token readout): ξ = sqrt(s0/N0) X Ω1 Ω2 e_{S-1}.
std::vector<double> slow_xi_good(const Options &o, const Split &sp, const std::vector<double> &Wsame,
                                 const std::vector<double> &Wunif) {
  const size_t N0 = input_dim(o), S = tokens(o);
  std::vector<double> xi(sp.P * N0), O1, O2;
  for (size_t mu = 0; mu < sp.P; ++mu) {
    const double *X = markov_test::example(o, sp, mu);
    slow_attention(Wsame, X, N0, S, O1);
    slow_attention(Wunif, X, N0, S, O2);
    std::vector<double> w2(S), A(S, 0.0);
    for (size_t s = 0; s < S; ++s) w2[s] = O2[s + S * (S - 1)];
    for (size_t s = 0; s < S; ++s)
      for (size_t t = 0; t < S; ++t) A[s] += O1[s + S * t] * w2[t];
    for (size_t i = 0; i < N0; ++i) {
      double v = 0;
      for (size_t s = 0; s < S; ++s) v += X[i + N0 * s] * A[s];
      xi[mu * N0 + i] = std::sqrt(o.variances[0] / double(N0)) * v;
    }
  }
  return xi;
}

// Textbook GP regression mean with a plain Cholesky; accuracy of sign(mean).
double slow_gp_accuracy(const Options &o, const std::vector<double> &xtr, const Split &tr, const std::vector<double> &xte,
                        const Split &te) {
  const size_t P = tr.P, N0 = input_dim(o);
  const double c = o.variances[1] * o.variances[2] * o.variances[3];
  auto dot = [N0](const double *a, const double *b) {
    double s = 0;
    for (size_t i = 0; i < N0; ++i) s += a[i] * b[i];
    return s;
  };
  std::vector<double> L(P * P, 0.0);
  for (size_t i = 0; i < P; ++i)
    for (size_t j = 0; j <= i; ++j) L[i * P + j] = c * dot(&xtr[i * N0], &xtr[j * N0]) + (i == j ? o.temperature : 0.0);
  for (size_t j = 0; j < P; ++j) {
    for (size_t k = 0; k < j; ++k) L[j * P + j] -= L[j * P + k] * L[j * P + k];
    L[j * P + j] = std::sqrt(L[j * P + j]);
    for (size_t i = j + 1; i < P; ++i) {
      for (size_t k = 0; k < j; ++k) L[i * P + j] -= L[i * P + k] * L[j * P + k];
      L[i * P + j] /= L[j * P + j];
    }
  }
  std::vector<double> alpha(tr.y);
  for (size_t i = 0; i < P; ++i) {
    for (size_t k = 0; k < i; ++k) alpha[i] -= L[i * P + k] * alpha[k];
    alpha[i] /= L[i * P + i];
  }
  for (size_t i = P; i-- > 0;) {
    for (size_t k = i + 1; k < P; ++k) alpha[i] -= L[k * P + i] * alpha[k];
    alpha[i] /= L[i * P + i];
  }
  size_t right = 0;
  for (size_t m = 0; m < te.P; ++m) {
    double f = 0;
    for (size_t mu = 0; mu < P; ++mu) f += c * dot(&xte[m * N0], &xtr[mu * N0]) * alpha[mu];
    right += (f > 0) == (te.y[m] > 0);
  }
  return double(right) / double(te.P);
}

}  // namespace

TEST_CASE("markov dataset record follows dataset.h (config all)") {
  Options o;
  o.P = 20;
  o.P_test = 10;
  Ctx ctx;
  Rec ds, ex;
  am_rng rng;
  am_rng_init(&rng, 42, 0);
  REQUIRE_MESSAGE(make_dataset(ctx, o, rng, ds, ex) == AM_OK, ctx.err());
  const char *kind = nullptr;
  REQUIRE(am_record_get_string(ds, "kind", &kind) == AM_OK);
  CHECK(std::string(kind) == "attention");
  std::vector<size_t> shape;
  const std::vector<double> X = array_c(ds, "X_train", &shape);
  CHECK(shape == std::vector<size_t>{20, 31, 231});
  array_c(ds, "X_test", &shape);
  CHECK(shape == std::vector<size_t>{10, 31, 231});
  const std::vector<double> y = array_c(ds, "y_train", &shape);
  CHECK(shape == std::vector<size_t>{20});
  for (size_t mu = 0; mu < 20; ++mu) CHECK(y[mu] == (mu < 10 ? 1.0 : -1.0));
  CHECK(numbers(am_record_get(ds, "heads")) == std::vector<double>{2, 2});
  CHECK(numbers(am_record_get(ds, "widths")) == std::vector<double>{10, 10, 10});
  CHECK(numbers(am_record_get(ds, "variances")) == std::vector<double>{1, 1, 1, 1});
  CHECK(numbers(am_record_get(ds, "widths_scan")) == std::vector<double>{10, 30, 50, 100, 300, 500, 1000});
  double T = 0;
  REQUIRE(am_record_get_number(ds, "temperature", &T) == AM_OK);
  CHECK(T == 0.01);
  const char *readout = nullptr;
  REQUIRE(am_record_get_string(ds, "readout", &readout) == AM_OK);
  CHECK(std::string(readout) == "last");
  const am_record *pl = am_record_get(ds, "path_labels");
  REQUIRE(am_record_size(pl) == 4);
  CHECK(std::string(am_record_string(am_record_at(pl, 2))) == "d (rand→unif)");

  // heads: W[i][j] (C order) = build_head's W(i, j) (i = key side); l1_h1 is same_token
  const am_record *att = am_record_get(ds, "attention");
  REQUIRE(att);
  CHECK(am_record_size(att) == 4);
  const std::vector<double> Wc = array_c(att, "l1_h1", &shape);
  CHECK(shape == std::vector<size_t>{231, 231});
  const std::vector<double> Wsame = build_head(o, HeadKind::SameToken, nullptr);
  CHECK(Wc[(200 + 0) * 231 + (200 + 5)] == 15.0);   // key BOS, query 5: 1.5 β
  CHECK(Wc[(200 + 4) * 231 + (200 + 5)] == 10.0);   // key 4 just before query 5
  CHECK(Wc[(200 + 5) * 231 + (200 + 4)] == 0.0);    // not the other way round
  bool same = true;
  for (size_t i = 0; i < 231; ++i)
    for (size_t j = 0; j < 231; ++j) same = same && Wc[i * 231 + j] == Wsame[i + 231 * j];
  CHECK(same);
  CHECK(am_record_get(att, "l2_h2") != nullptr);

  // the core reads it back: arch and ξ shapes
  am_arch arch;
  am_arch_default(&arch);
  double temp = 0;
  REQUIRE_MESSAGE(am_dataset_arch(ctx, ds, &arch, &temp) == AM_OK, ctx.err());
  CHECK(arch.layers == 2);
  CHECK(am_arch_paths(&arch) == 4);

  // extras
  const char *cfg = nullptr;
  REQUIRE(am_record_get_string(ex, "config", &cfg) == AM_OK);
  CHECK(std::string(cfg) == "all");
  double oop = 0;
  REQUIRE(am_record_get_number(am_record_get(ex, "noise"), "out_of_plane", &oop) == AM_OK);
  CHECK(oop == 1.0);
  const am_record *stats = am_record_get(am_record_get(ex, "data_stats"), "train");
  REQUIRE(stats);
  double tp = 0;
  REQUIRE(am_record_get_number(stats, "transitions_pos", &tp) == AM_OK);
  CHECK(tp == 10 * 29);
  // path subsets (dataset.h): good = path 0 (g), good_denoising = paths 0 and 2 (g, d) in packing order
  const am_record *subs = am_record_get(ds, "path_subsets");
  REQUIRE(am_record_size(subs) == 2);
  CHECK(std::string(am_record_string(am_record_get(am_record_at(subs, 0), "name"))) == "good");
  CHECK(numbers(am_record_get(am_record_at(subs, 0), "paths")) == std::vector<double>{0});
  CHECK(std::string(am_record_string(am_record_get(am_record_at(subs, 1), "name"))) == "good_denoising");
  CHECK(numbers(am_record_get(am_record_at(subs, 1), "paths")) == std::vector<double>{0, 2});
  CHECK(am_record_get(ex, "gp_test_accuracy") == nullptr);   // estimator work now (run.gp_subsets)
}

TEST_CASE("markov 2paths: out-of-plane noise 5 by default, blank second head, two path labels") {
  Options o;
  o.P = 10;
  o.P_test = 4;
  o.config = Config::TwoPaths;
  Ctx ctx;
  Rec ds, ex;
  am_rng rng;
  am_rng_init(&rng, 42, 0);
  REQUIRE_MESSAGE(make_dataset(ctx, o, rng, ds, ex) == AM_OK, ctx.err());
  CHECK(numbers(am_record_get(ds, "heads")) == std::vector<double>{2, 1});
  std::vector<size_t> shape;
  const std::vector<double> Wb = array_c(am_record_get(ds, "attention"), "l1_h2", &shape);
  bool zero = true;
  for (double v : Wb) zero = zero && v == 0.0;
  CHECK(zero);
  double oop = 0;
  REQUIRE(am_record_get_number(am_record_get(ex, "noise"), "out_of_plane", &oop) == AM_OK);
  CHECK(oop == 5.0);
  const am_record *pl = am_record_get(ex, "path_labels");
  REQUIRE(am_record_size(pl) == 2);
  CHECK(std::string(am_record_string(am_record_at(pl, 1))) == "d (unif→unif)");
}

TEST_CASE("markov path subsets: the theory's gp_subsets equal the GP of the sub-network built on its own") {
  // Same attention (the same head matrices), ξ normalised by 1/√H_sub: K_GP = (s1 s2 sa / H_sub) Σ_{π∈sub} C^ππ is
  // the sub-network's own GP kernel, so the predictions agree to round-off (ξ rescaled by √(H_tot/H_sub)).
  for (Config cfg : {Config::All, Config::TwoPaths, Config::GoodDenoising}) {
    CAPTURE(config_name(cfg));
    Options o;
    o.P = 80;
    o.P_test = 200;
    o.config = cfg;
    o.variances = {1.3, 0.7, 1.1, 0.9};
    Ctx ctx;
    Rec ds;
    am_rng rng;
    am_rng_init(&rng, 5, 0);
    REQUIRE_MESSAGE(make_dataset(ctx, o, rng, ds, nullptr) == AM_OK, ctx.err());
    am_rng r_train, r_test, r_heads;
    am_rng_split(&rng, STREAM_TRAIN, &r_train);
    am_rng_split(&rng, STREAM_TEST, &r_test);
    am_rng_split(&rng, STREAM_HEADS, &r_heads);
    Split tr, te;
    generate_split(o, &r_train, o.P, &tr);
    generate_split(o, &r_test, o.P_test, &te);
    const Network subnets[2] = {network_for(Config::Good),
                                network_for(cfg == Config::TwoPaths ? Config::TwoPaths : Config::GoodDenoising)};
    const char *names[2] = {"good", "good_denoising"};
    for (int k = 0; k < 2; ++k) {
      CAPTURE(names[k]);
      std::vector<double> mean_sub, mean_ref;
      double acc_ref = -1;
      REQUIRE_MESSAGE(markov_test::standalone_gp(ctx, o, subnets[k], r_heads, tr, te, &mean_ref, &acc_ref) == AM_OK,
                      ctx.err());
      const double acc = markov_test::gp_subset_accuracy(ctx, ds, names[k], &mean_sub);
      REQUIRE(mean_sub.size() == mean_ref.size());
      double scale = 0, diff = 0;
      for (size_t i = 0; i < mean_ref.size(); ++i) {
        scale = std::fmax(scale, std::fabs(mean_ref[i]));
        diff = std::fmax(diff, std::fabs(mean_sub[i] - mean_ref[i]));
      }
      // Round-off of two P = 80 solves whose operations differ in order (the √(H_tot/H_sub) rescale, BLAS kernels,
      // SIMD width): P·κ(Γ)·ε relative by the normwise estimate; at most 5e-14 seen on the scalar, sse2 and avx2
      // paths, 2000 times below 1e-10. The accuracies are counts: equal when no mean is within that of zero
      // (the smallest |mean| is ≥ 5.9e-4 here).
      CHECK(diff <= 1e-10 * scale);
      bool margin = true;
      for (double m : mean_ref) margin = margin && std::fabs(m) > 1e-10 * scale;
      CHECK(margin);
      CHECK(acc == acc_ref);
    }
  }
}

TEST_CASE("markov path subsets: GP accuracy of the good path equals an independent slow GP predictor") {
  Options o;
  o.P = 60;
  o.P_test = 120;
  Ctx ctx;
  Rec ds, ex;
  am_rng rng;
  am_rng_init(&rng, 8, 0);
  REQUIRE_MESSAGE(make_dataset(ctx, o, rng, ds, ex) == AM_OK, ctx.err());
  const double acc_good = markov_test::gp_subset_accuracy(ctx, ds, "good");
  const double acc_gd = markov_test::gp_subset_accuracy(ctx, ds, "good_denoising");
  CHECK(acc_gd >= 0.0);
  CHECK(acc_gd <= 1.0);

  // regenerate the same splits (same streams as make_dataset) and recompute slowly
  am_rng r_train, r_test;
  am_rng_split(&rng, STREAM_TRAIN, &r_train);
  am_rng_split(&rng, STREAM_TEST, &r_test);
  Split tr, te;
  generate_split(o, &r_train, o.P, &tr);
  generate_split(o, &r_test, o.P_test, &te);
  const std::vector<double> Ws = build_head(o, HeadKind::SameToken, nullptr);
  const std::vector<double> Wu = build_head(o, HeadKind::Uniform, nullptr);
  const double slow = slow_gp_accuracy(o, slow_xi_good(o, tr, Ws, Wu), tr, slow_xi_good(o, te, Ws, Wu), te);
  // identical up to a test point whose mean is within round-off of 0 (one point = 1/120)
  CHECK(std::fabs(acc_good - slow) <= 1.0 / 120.0 + 1e-12);
  CHECK(slow > 0.7);  // the good path alone classifies well (spec §6.5: 94 %)
}

#ifdef AM_MARKOV_PLUGIN_PATH
// Through the plugin ABI: registry load, parameter table parse, create, make_dataset.
TEST_CASE("markov plugin module: descriptor, parameter parsing, make_dataset through the C entry") {
  Ctx ctx;
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE_MESSAGE(am_registry_load_file(ctx, reg, AM_MARKOV_PLUGIN_PATH) == AM_OK, ctx.err());
  const am_plugin_desc *d = am_registry_find(reg, "markov", AM_PLUGIN_TASK);
  REQUIRE(d);
  CHECK(d->data_kinds == AM_DATA_ATTENTION);
  CHECK(std::string(d->default_estimator) == "theory");
  const char *keys[] = {"config", "P", "P_test", "widths_scan"};
  const char *vals[] = {"2paths", "10", "4", "30,100"};
  int used[4] = {0, 0, 0, 0};
  Rec params;
  REQUIRE_MESSAGE(am_params_parse(ctx, d, 4, keys, vals, used, params) == AM_OK, ctx.err());
  CHECK(used[0] + used[1] + used[2] + used[3] == 4);
  am_host host{};
  host.struct_size = sizeof host;
  host.ctx = ctx;
  host.params = params;
  host.seed = 1;
  host.seed = 1;
  host.rng_stream = 0;
  void *inst = nullptr;
  REQUIRE_MESSAGE(d->create(&host, &inst) == AM_OK, ctx.err());
  Rec ds, ex;
  REQUIRE_MESSAGE(d->make_dataset(inst, ds, ex) == AM_OK, ctx.err());
  d->destroy(inst);
  CHECK(numbers(am_record_get(ds, "heads")) == std::vector<double>{2, 1});
  CHECK(numbers(am_record_get(ds, "widths")) == std::vector<double>{30, 30, 30});
  double oop = 0;
  REQUIRE(am_record_get_number(am_record_get(ex, "noise"), "out_of_plane", &oop) == AM_OK);
  CHECK(oop == 5.0);  // auto for 2paths
  // a bad value is a usage error naming the key
  const char *bk[] = {"noise_out_of_plane"};
  const char *bv[] = {"-0.5"};
  int bused[1] = {0};
  Rec p2;
  am_status st = am_params_parse(ctx, d, 1, bk, bv, bused, p2);
  if (st == AM_OK) {  // inside the table's range [-1, ..]: rejected by create
    host.params = p2;
    st = d->create(&host, &inst);
  }
  CHECK(st == AM_ERR_USAGE);
  CHECK(std::string(ctx.err()).find("noise_out_of_plane") != std::string::npos);
  am_registry_destroy(&reg);
}
#endif
