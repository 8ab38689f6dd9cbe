// The dataset is the task's and never changes after make_dataset (plugin.h, estimate): pinned here byte for byte
// across a whole width scan of real estimators, run through the plugin interface exactly as the run API calls it
// (one instance per run spec, estimate once per width). A deep copy made before the scan is compared with the
// dataset after it: every key in order, every number and array element by its bits, every string.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

namespace {

// "" when a and b are the same tree bit for bit, else the dotted path of the first difference.
std::string first_difference(const am_record *a, const am_record *b, const std::string &path) {
  const am_record_type t = am_record_type_of(a);
  if (t != am_record_type_of(b)) return path + " (type)";
  switch (t) {
    case AM_REC_NUMBER: {
      const double x = am_record_number(a), y = am_record_number(b);
      return std::memcmp(&x, &y, sizeof x) == 0 ? "" : path;
    }
    case AM_REC_BOOL: return am_record_bool(a) == am_record_bool(b) ? "" : path;
    case AM_REC_STRING: return std::strcmp(am_record_string(a), am_record_string(b)) == 0 ? "" : path;
    case AM_REC_ARRAY: {
      am_array_view u{}, v{};
      if (am_record_array(a, &u) != AM_OK || am_record_array(b, &v) != AM_OK) return path + " (unreadable)";
      if (u.dtype != v.dtype || u.ndim != v.ndim) return path + " (dtype/ndim)";
      for (uint32_t d = 0; d < u.ndim; ++d)
        if (u.shape[d] != v.shape[d]) return path + " (shape)";
      const size_t bytes = am_array_view_count(&u) * am_dtype_size(u.dtype);
      return std::memcmp(u.data, v.data, bytes) == 0 ? "" : path + " (values)";
    }
    case AM_REC_OBJECT:
    case AM_REC_LIST: {
      if (am_record_size(a) != am_record_size(b)) return path + " (size)";
      for (size_t i = 0; i < am_record_size(a); ++i) {
        const char *ka = am_record_key(a, i), *kb = am_record_key(b, i);
        if ((ka == nullptr) != (kb == nullptr) || (ka && std::strcmp(ka, kb) != 0)) return path + " (keys)";
        const std::string d = first_difference(am_record_at(a, i), am_record_at(b, i),
                                               path + "." + (ka ? std::string(ka) : std::to_string(i)));
        if (!d.empty()) return d;
      }
      return "";
    }
    default: return "";
  }
}

struct Owned {
  am_context *ctx = nullptr;
  am_registry *reg = nullptr;
  am_record *task_params = nullptr, *est_params = nullptr, *dataset = nullptr, *extras = nullptr, *copy = nullptr;
  ~Owned() {
    for (am_record **r : {&task_params, &est_params, &dataset, &extras, &copy}) am_record_destroy(r);
    am_registry_destroy(&reg);
    am_context_destroy(&ctx);
  }
};

am_record *params_of(am_context *ctx, const am_plugin_desc *d, const std::vector<const char *> &kv) {
  am_record *p = nullptr;
  REQUIRE(am_record_create(&p) == AM_OK);
  std::vector<const char *> keys, vals;
  for (size_t i = 0; i + 1 < kv.size(); i += 2) {
    keys.push_back(kv[i]);
    vals.push_back(kv[i + 1]);
  }
  std::vector<int> used(keys.size() + 1, 0);
  REQUIRE_MESSAGE(am_params_parse(ctx, d, keys.size(), keys.data(), vals.data(), used.data(), p) == AM_OK,
                  am_context_last_error(ctx));
  return p;
}

// Makes the task's dataset, keeps a deep copy, runs the estimator once per entry of `widths` (one instance, as the
// run API does) and requires the dataset unchanged.
void scan_keeps_dataset(const char *task, const std::vector<const char *> &task_kv, const char *est,
                        const std::vector<const char *> &est_kv, const std::vector<std::vector<double>> &widths) {
  Owned o;
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = 2;
  REQUIRE(am_context_create(&o.ctx, &cs) == AM_OK);
  REQUIRE(am_registry_create(&o.reg) == AM_OK);
  REQUIRE(am_registry_discover(nullptr, o.reg, nullptr) == AM_OK);
  const am_plugin_desc *t = am_registry_find(o.reg, task, AM_PLUGIN_TASK);
  const am_plugin_desc *e = am_registry_find(o.reg, est, AM_PLUGIN_ESTIMATOR);
  REQUIRE(t != nullptr);
  REQUIRE(e != nullptr);
  o.task_params = params_of(o.ctx, t, task_kv);
  o.est_params = params_of(o.ctx, e, est_kv);
  am_host th, eh;
  am_host_init(&th, o.ctx, o.task_params, 7, 0, 2);
  am_host_init(&eh, o.ctx, o.est_params, 7, 1, 2);
  void *ti = nullptr, *ei = nullptr;
  REQUIRE(t->create(&th, &ti) == AM_OK);
  REQUIRE(am_record_create(&o.dataset) == AM_OK);
  REQUIRE(am_record_create(&o.extras) == AM_OK);
  REQUIRE_MESSAGE(t->make_dataset(ti, o.dataset, o.extras) == AM_OK, am_context_last_error(o.ctx));
  t->destroy(ti);
  REQUIRE(am_record_clone(o.dataset, &o.copy) == AM_OK);
  REQUIRE(first_difference(o.dataset, o.copy, "dataset").empty());  // the comparison sees the copy as equal
  REQUIRE(e->create(&eh, &ei) == AM_OK);
  for (const std::vector<double> &w : widths) {
    am_record *inputs = nullptr, *run = nullptr;
    REQUIRE(am_record_create(&inputs) == AM_OK);
    REQUIRE(am_record_create(&run) == AM_OK);
    if (!w.empty()) REQUIRE(am_record_set_vector(inputs, "widths", w.data(), w.size()) == AM_OK);
    const am_status st = e->estimate(ei, o.dataset, inputs, run);
    CHECK_MESSAGE(st >= 0, am_context_last_error(o.ctx));
    am_record_destroy(&inputs);
    am_record_destroy(&run);
    CHECK_MESSAGE(first_difference(o.dataset, o.copy, "dataset").empty(),
                  est, " changed ", first_difference(o.dataset, o.copy, "dataset"));
  }
  e->destroy(ei);
  // The comparison can fail: one changed number of the copy is found, by its path.
  REQUIRE(am_record_set_number(o.copy, "scan_probe", 1.0) == AM_OK);
  CHECK(first_difference(o.dataset, o.copy, "dataset") == "dataset (size)");
}

}  // namespace

TEST_CASE("scan: the theory estimator leaves the markov dataset bit for bit as the task made it") {
  scan_keeps_dataset("markov", {"P", "60", "P_test", "40"}, "theory", {},
                     {{10, 10, 10}, {30, 30, 30}, {100, 100, 100}, {}});
}

TEST_CASE("scan: the posterior estimator leaves the markov dataset unchanged") {
  scan_keeps_dataset("markov", {"P", "30", "P_test", "20"}, "posterior", {"chains", "2", "samples", "40", "warmup", "40"},
                     {{10, 10, 10}, {30, 30, 30}});
}

TEST_CASE("scan: pseudolikelihood and vanilla leave the potts dataset unchanged") {
  const std::vector<const char *> potts = {"L", "6", "C", "3", "M", "200", "M_test", "100", "burnin", "50"};
  scan_keeps_dataset("potts", potts, "pseudolikelihood", {"max_iter", "30"}, {{}, {}});
  scan_keeps_dataset("potts", potts, "vanilla", {"epochs", "5", "eval_every", "5"}, {{}});
}
