// centroid.cpp — an estimator plugin in C++ on the SDK (docs/writing-a-plugin.md). A baseline for attention
// data: classify each test sequence by the nearer class centroid of the training sequences' mean tokens.
// Build against an installed attnmech (see the guide):
//   c++ -std=c++17 -shared -fPIC $(pkg-config --cflags attnmech) $(pkg-config --variable=plugin_cflags attnmech)
//       centroid.cpp -o am-centroid.so $(pkg-config --libs attnmech) $(pkg-config --variable=plugin_libs attnmech)
#include <attnmech/plugin.hpp>

#include <vector>

namespace {

struct Opt {
  double shrink = 0;
};

constexpr am::sdk::Param<Opt> kParams[] = {
    am::sdk::param<&Opt::shrink>("shrink", "0", "shrink both centroids toward their mean by this fraction", 0, 1),
};

// The science: mean tokens, class centroids, nearest-centroid accuracy on the test split.
std::vector<double> mean_tokens(const am_record *ds, const char *key, size_t *P, size_t *N0) {
  am_array_view v;
  am::sdk::check(am_record_get_array(ds, key, &v), key);
  std::vector<double> X(am_array_view_count(&v)), m;
  am::sdk::check(am_array_to_f64_c(nullptr, &v, X.data(), X.size()), key);
  *P = v.shape[0];
  *N0 = v.shape[2];
  const size_t S = v.shape[1];
  m.assign(*P * *N0, 0.0);
  for (size_t mu = 0; mu < *P; ++mu)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < *N0; ++i) m[mu * *N0 + i] += X[(mu * S + s) * *N0 + i] / static_cast<double>(S);
  return m;
}

struct Centroid {
  Opt opt;
  Centroid(const am::sdk::Host &, const Opt &o) : opt(o) {}

  void estimate(const am_record *ds, am_record *run) {
    size_t P = 0, Pt = 0, N0 = 0;
    const std::vector<double> m = mean_tokens(ds, "X_train", &P, &N0), y = am::sdk::get_vector(ds, "y_train");
    const std::vector<double> mt = mean_tokens(ds, "X_test", &Pt, &N0), yt = am::sdk::get_vector(ds, "y_test");
    std::vector<double> c[2] = {std::vector<double>(N0), std::vector<double>(N0)};
    double n[2] = {0, 0};
    for (size_t mu = 0; mu < P; ++mu) {
      const int k = y[mu] > 0;
      n[k] += 1;
      for (size_t i = 0; i < N0; ++i) c[k][i] += m[mu * N0 + i];
    }
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < N0; ++i) c[k][i] /= n[k] > 0 ? n[k] : 1;
    for (size_t i = 0; i < N0; ++i) {
      const double mid = 0.5 * (c[0][i] + c[1][i]);
      for (auto &ck : c) ck[i] = mid + (1 - opt.shrink) * (ck[i] - mid);
    }
    double correct = 0;
    for (size_t mu = 0; mu < Pt; ++mu) {
      double d[2] = {0, 0};
      for (int k = 0; k < 2; ++k)
        for (size_t i = 0; i < N0; ++i) d[k] += (mt[mu * N0 + i] - c[k][i]) * (mt[mu * N0 + i] - c[k][i]);
      correct += (d[1] < d[0]) == (yt[mu] > 0);
    }
    am_record *test = am::sdk::object(run, "test");
    am::sdk::put(test, "accuracy", correct / static_cast<double>(Pt));
  }

  // Plots and summary lines of the results (docs/results-schema.md, "report").
  static void describe(const am_record *, am_record *report) {
    am_record *plot = am::sdk::append_object(am::sdk::list(report, "plots"));
    am::sdk::put(plot, "file", "centroid_accuracy");
    am::sdk::put(plot, "kind", "bars");
    am::sdk::put(plot, "title", "nearest-centroid test accuracy per run");
    am::sdk::put(plot, "categories", "runs.*.width");
    am::sdk::put(am::sdk::append_object(am::sdk::list(plot, "series")), "y", "runs.*.test.accuracy");
    am_record *table = am::sdk::append_object(am::sdk::list(report, "summary"));
    am::sdk::put(table, "kind", "table");
    am::sdk::put(table, "title", "nearest-centroid baseline");
    am_record *cols = am::sdk::list(table, "columns");
    am_record *c1 = am::sdk::append_object(cols), *c2 = am::sdk::append_object(cols);
    am::sdk::put(c1, "header", "N");
    am::sdk::put(c1, "path", "runs.*.width");
    am::sdk::put(c2, "header", "accuracy");
    am::sdk::put(c2, "path", "runs.*.test.accuracy");
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Centroid, kParams>(
    "centroid", "1.0", "nearest class centroid of the mean tokens (a baseline)", AM_DATA_ATTENTION);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
