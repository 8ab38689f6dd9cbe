// centroid.cpp — an estimator plugin in C++ on the SDK, attnmech/plugin.hpp (docs/writing-a-plugin.md). A
// baseline for attention data: classify each test sequence by the nearer class centroid of the training
// sequences' mean tokens. Built out of tree against an installed attnmech, exactly as tests/cli/test_install.sh does:
//   c++ -std=c++17 -O2 -shared -fPIC centroid.cpp -o am-centroid.so $(pkg-config --cflags --libs attnmech-plugin)
// The science sits between the "science" fences; everything else is what any C++ estimator writes (the test
// counts it: at most 40 non-blank, non-comment lines).
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include <vector>

namespace {

struct Opt {
  double shrink = 0;
};

// science: begin
// The parameters of the method: one table is the descriptor's table and the parser into Opt.
constexpr am::sdk::Param<Opt> kParams[] = {
    am::sdk::param<&Opt::shrink>("shrink", "0", "shrink both centroids toward their midpoint by this fraction", 0, 1),
};

// The mean token of each sequence of X [P, S, N0] (C order): m [P, N0].
std::vector<double> mean_tokens(const am_record *ds, const char *key, size_t *P, size_t *N0) {
  am_array_view v;
  am::sdk::check(am_record_get_array(ds, key, &v), key);
  std::vector<double> X(am_array_view_count(&v));
  am::sdk::check(am_array_to_f64_c(nullptr, &v, X.data(), X.size()), key);
  const size_t S = v.shape[1];
  *P = v.shape[0];
  *N0 = v.shape[2];
  std::vector<double> m(*P * *N0, 0.0);
  for (size_t mu = 0; mu < *P; ++mu)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < *N0; ++i) m[mu * *N0 + i] += X[(mu * S + s) * *N0 + i] / static_cast<double>(S);
  return m;
}

// Class centroids c[0] (y < 0), c[1] (y > 0) of the training mean tokens, shrunk toward their midpoint;
// the fraction of test sequences whose nearer centroid has their label.
double centroid_accuracy(const am_record *ds, double shrink) {
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
    for (auto &ck : c) ck[i] = mid + (1 - shrink) * (ck[i] - mid);
  }
  double correct = 0;
  for (size_t mu = 0; mu < Pt; ++mu) {
    double d[2] = {0, 0};
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < N0; ++i) d[k] += (mt[mu * N0 + i] - c[k][i]) * (mt[mu * N0 + i] - c[k][i]);
    correct += (d[1] < d[0]) == (yt[mu] > 0);
  }
  return correct / static_cast<double>(Pt);
}

// The report: a bar per run of the test accuracy, and a summary table.
void report(am::spec::Report &r) {
  r.bars("centroid_accuracy", "nearest-centroid test accuracy per run", "width N", "test accuracy")
      .str("categories", "runs.*.width")
      .series("accuracy", "", "runs.*.test.accuracy");
  r.table("nearest-centroid baseline").column("N", "runs.*.width", "%.0f").column("accuracy", "runs.*.test.accuracy", "%.4f");
}
// science: end

struct Centroid {
  Opt opt;
  Centroid(const am::sdk::Host &, const Opt &o) : opt(o) {}
  // inputs: the run's widths and start, which a nearest-centroid baseline does not use
  void estimate(const am_record *ds, const am_record * /*inputs*/, am_record *run) {
    am::sdk::put(am::sdk::object(run, "test"), "accuracy", centroid_accuracy(ds, opt.shrink));
  }
  static am_status describe(const am_record *, am_record *report_record) {
    am::spec::Report r(report_record);
    report(r);
    return r.status();
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Centroid, kParams>(
    "centroid", "1.0", "nearest class centroid of the mean tokens (a baseline)", AM_DATA_ATTENTION);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
