// attnmech — the run API (run.h): spec → validation → task → width scan of estimator runs → results
// document (docs/results-schema.md, schema 2) with the plugins' report spec.
#include "abi.hpp"
#include "internal.hpp"
#include <common/text.hpp>

#include "attnmech/host.hpp"
#include "attnmech/run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct am_run_spec {
  std::string task, estimator;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<double> widths;  // the --width scan (empty = none)
  am_record *start = nullptr;
  ~am_run_spec() { am_record_destroy(&start); }
};

namespace {

using clock_type = std::chrono::steady_clock;

struct Instance {  // a created plugin instance
  const am_plugin_desc *d = nullptr;
  void *inst = nullptr;
  ~Instance() {
    if (d && inst && d->destroy) d->destroy(inst);
  }
};

using am::text::data_kinds_text;
using am::text::parse_u64;
using am::text::trim;

const char *kind_word(uint32_t kind) { return am::plugin_kind_word(kind); }


std::string names_of(const am_registry *r, uint32_t kind, uint32_t need_data) {
  std::string s;
  for (const am_plugin_info &p : am::sdk::registry_plugins(r)) {
    const am_plugin_desc *d = p.desc;
    if (d->kind != kind || (need_data && !(d->data_kinds & need_data))) continue;
    s += (s.empty() ? "" : ", ") + std::string(d->name);
  }
  return s.empty() ? "none" : s;
}

std::string param_names(const am_plugin_desc *d) {
  if (!d) return "";
  std::string s = std::string("; ") + kind_word(d->kind) + " " + d->name + ":";
  for (uint32_t i = 0; i < d->n_params; ++i) s += std::string(i ? ", " : " ") + am::param_at(d, i)->name;
  if (d->n_params == 0) s += " (none)";
  return s;
}

bool has_param(const am_plugin_desc *d, const std::string &key) {
  for (uint32_t i = 0; d && i < d->n_params; ++i)
    if (key == am::param_at(d, i)->name) return true;
  return false;
}

const char *plugin_path(const am_registry *r, const am_plugin_desc *d) {
  for (const am_plugin_info &p : am::sdk::registry_plugins(r))
    if (d && p.desc == d) return p.path;
  return "";
}

// Everything decided before computing: plugins, host keys, validated parameters.
struct Plan {
  const am_plugin_desc *task = nullptr, *est = nullptr;
  uint64_t seed = 0;
  int threads = 0;
  std::vector<double> host_widths;  // host key `widths` (empty = not given)
  bool user_widths = false;         // `widths` given in any form (the dataset's widths_scan is then not used)
  am::sdk::Record task_params, est_params;
};

// The task named by the spec, or an estimator that runs without one.
am_status pick_plugins(am_context *ctx, const am_registry *reg, const am_run_spec *s, Plan *pl) {
  const std::string &name = s->task;
  if (name.empty()) {
    if (s->estimator.empty()) return am::fail(ctx, AM_ERR_USAGE, "no task and no estimator given");
    pl->est = am_registry_find(reg, s->estimator.c_str(), AM_PLUGIN_ESTIMATOR);
    if (!pl->est || !(pl->est->data_kinds & AM_DATA_NONE))
      return am::fail(ctx, AM_ERR_USAGE, "'%s' is not an estimator that runs without a task (those: %s)",
                      s->estimator.c_str(), names_of(reg, AM_PLUGIN_ESTIMATOR, AM_DATA_NONE).c_str());
    return AM_OK;
  }
  pl->task = am_registry_find(reg, name.c_str(), AM_PLUGIN_TASK);
  if (!pl->task) {
    const am_plugin_desc *e = am_registry_find(reg, name.c_str(), AM_PLUGIN_ESTIMATOR);
    if (e && (e->data_kinds & AM_DATA_NONE)) {
      if (!s->estimator.empty() && s->estimator != name)
        return am::fail(ctx, AM_ERR_USAGE, "'%s' is an estimator that runs without a task; --estimator does not apply",
                        name.c_str());
      pl->est = e;
      return AM_OK;
    }
    if (e)
      return am::fail(ctx, AM_ERR_USAGE, "'%s' is an estimator that needs a task (accepts %s data): give a task and "
                      "choose this estimator for it", name.c_str(), data_kinds_text(e->data_kinds).c_str());
    std::string msg = "unknown task '" + name + "' (tasks: " + names_of(reg, AM_PLUGIN_TASK, 0) +
                      "; estimators without a task: " + names_of(reg, AM_PLUGIN_ESTIMATOR, AM_DATA_NONE) + ")";
    const am_registry_summary sum = am::sdk::registry_summary(reg);
    if (sum.plugins == 0) {
      std::string where;
      for (const am_search_dir_info &dir : am::sdk::registry_search_dirs(reg))
        where += (where.empty() ? "" : ", ") + std::string(dir.path);
      msg += "; no plugins were found at all (searched: " + (where.empty() ? std::string("nothing") : where) +
             "); set AM_PLUGIN_PATH or see 'attnmech list'";
    }
    else if (sum.report_lines > 0) msg += "; some plugins failed to load, see 'attnmech list'";
    return am::fail(ctx, AM_ERR_USAGE, "%s", msg.c_str());
  }
  const char *def = pl->task->default_estimator;
  if (s->estimator.empty() && !(def && *def))
    return am::fail(ctx, AM_ERR_USAGE, "task '%s' names no default estimator: choose one with --estimator (those for "
                    "its %s data: %s)", pl->task->name, data_kinds_text(pl->task->data_kinds).c_str(),
                    names_of(reg, AM_PLUGIN_ESTIMATOR, pl->task->data_kinds).c_str());
  const std::string en = !s->estimator.empty() ? s->estimator : def;
  pl->est = am_registry_find(reg, en.c_str(), AM_PLUGIN_ESTIMATOR);
  if (!pl->est)
    return am::fail(ctx, AM_ERR_USAGE, "unknown estimator '%s' (estimators: %s)", en.c_str(),
                    names_of(reg, AM_PLUGIN_ESTIMATOR, 0).c_str());
  if (!(pl->est->data_kinds & pl->task->data_kinds))
    return am::fail(ctx, AM_ERR_USAGE,
                    "estimator '%s' does not accept the %s data that task '%s' makes (it accepts: %s)", en.c_str(),
                    data_kinds_text(pl->task->data_kinds).c_str(), pl->task->name,
                    data_kinds_text(pl->est->data_kinds).c_str());
  return AM_OK;
}

// Host keys seed/threads; `used` marks the settings taken (earlier duplicates of a key count as taken).
am_status host_keys(am_context *ctx, const am_run_spec *s, Plan *pl, std::vector<int> &used) {
  const auto &kv = s->sets;
  for (size_t i = 0; i < kv.size(); ++i)
    for (size_t j = i + 1; j < kv.size(); ++j)
      if (kv[i].first == kv[j].first) used[i] = 1;
  for (size_t i = 0; i < kv.size(); ++i) {
    if (used[i]) continue;
    if (kv[i].first == "seed") {
      if (!parse_u64(trim(kv[i].second), &pl->seed))
        return am::fail(ctx, AM_ERR_USAGE, "bad value '%s' for seed: expected a whole number in [0, 2^64-1]",
                        kv[i].second.c_str());
      used[i] = 1;
    } else if (kv[i].first == "threads") {
      uint64_t t = 0;
      if (!parse_u64(trim(kv[i].second), &t) || t > 4096)
        return am::fail(ctx, AM_ERR_USAGE, "bad value '%s' for threads: expected a whole number in [0, 4096]",
                        kv[i].second.c_str());
      pl->threads = static_cast<int>(t);
      used[i] = 1;
    }
  }
  return AM_OK;
}

am_status parse_params(am_context *ctx, const am_plugin_desc *d, const am_run_spec *s, std::vector<int> &used,
                       am_record *params) {
  std::vector<const char *> keys, vals;
  std::vector<size_t> idx;
  for (size_t i = 0; i < s->sets.size(); ++i)
    if (!used[i]) {
      keys.push_back(s->sets[i].first.c_str());
      vals.push_back(s->sets[i].second.c_str());
      idx.push_back(i);
    }
  std::vector<int> consumed(keys.size() + 1, 0);
  am_status st = am_params_parse(ctx, d, keys.size(), keys.data(), vals.data(), consumed.data(), params);
  if (st < 0) return st;
  for (size_t k = 0; k < idx.size(); ++k)
    if (consumed[k]) used[idx[k]] = 1;
  return AM_OK;
}

// The host key `widths` (when neither plugin has a parameter of that name).
am_status host_widths(am_context *ctx, const am_run_spec *s, Plan *pl, std::vector<int> &used) {
  for (size_t i = 0; i < s->sets.size(); ++i) {
    if (s->sets[i].first != "widths") continue;
    pl->user_widths = true;
    if (used[i] || has_param(pl->est, "widths")) continue;
    if (!pl->task) return am::fail(ctx, AM_ERR_USAGE, "'widths' needs a task ('%s' runs without one)", pl->est->name);
    // Checked like any integer-list parameter (libcore's one parser of parameter text).
    static const am_param_def kWidths = AM_PARAM("widths", AM_PARAM_INT_LIST, "", "W0,...,WL", 1, 1e12, nullptr);
    std::string unused;
    const std::string why = am::parse_param_value(&kWidths, s->sets[i].second.c_str(), &pl->host_widths, &unused);
    if (!why.empty() || pl->host_widths.empty())
      return am::fail(ctx, AM_ERR_USAGE,
                      "bad value '%s' for widths: expected positive whole numbers W0,...,WL separated by commas%s%s",
                      s->sets[i].second.c_str(), why.empty() ? "" : " (", why.empty() ? "" : (why + ")").c_str());
    used[i] = 1;
  }
  return AM_OK;
}

am_status make_plan(am_context *ctx, const am_registry *reg, const am_run_spec *s, Plan *pl) {
  if (!reg || !s) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_run: NULL registry or spec");
  am_status st;
  if ((st = pick_plugins(ctx, reg, s, pl)) != AM_OK) return st;
  if (!pl->task && !s->widths.empty())
    return am::fail(ctx, AM_ERR_USAGE, "--width needs a task ('%s' runs without one)", pl->est->name);
  std::vector<int> used(s->sets.size(), 0);
  if ((st = host_keys(ctx, s, pl, used)) != AM_OK) return st;
  if ((st = am_record_create(pl->task_params.out())) != AM_OK || (st = am_record_create(pl->est_params.out())) != AM_OK)
    return am::fail(ctx, st, "out of memory");
  if (pl->task && (st = parse_params(ctx, pl->task, s, used, pl->task_params.get())) != AM_OK) return st;
  if ((st = host_widths(ctx, s, pl, used)) != AM_OK) return st;
  if ((st = parse_params(ctx, pl->est, s, used, pl->est_params.get())) != AM_OK) return st;
  for (size_t i = 0; i < s->sets.size(); ++i)
    if (!used[i])
      return am::fail(ctx, AM_ERR_USAGE, "unknown key '%s' (valid keys: host: seed, threads%s%s%s)",
                      s->sets[i].first.c_str(), pl->task ? ", widths" : "", param_names(pl->task).c_str(),
                      param_names(pl->est).c_str());
  return AM_OK;
}

// ------------------------------------------------------------------ the dataset and the scan

// The width scan knows two dataset keys, declared in dataset.h for any data kind: "widths" (W_0..W_L: what a scan
// replaces, so also how many numbers it takes) and "widths_scan" (the task's default scan). A dataset without
// "widths" has nothing to scan.
size_t n_widths(const am_record *ds) {
  size_t n = 0;
  return am_record_get_vector(ds, "widths", nullptr, 0, &n) == AM_OK ? n : 0;
}

// Per run: the widths list to set (empty = leave the dataset's own).
am_status plan_scan(am_context *ctx, const am_run_spec *s, const Plan &pl, const am_record *ds,
                    std::vector<std::vector<double>> *scan) {
  if (!pl.task) {
    scan->emplace_back();
    return AM_OK;
  }
  const size_t nw = n_widths(ds);
  if (!s->widths.empty()) {
    if (nw == 0) return am::fail(ctx, AM_ERR_USAGE, "--width: the dataset of task '%s' has no widths", pl.task->name);
    for (double w : s->widths) scan->push_back(std::vector<double>(nw, w));
  } else if (!pl.host_widths.empty()) {
    if (nw && pl.host_widths.size() != nw)
      return am::fail(ctx, AM_ERR_USAGE, "bad value for widths: expected %zu numbers W0,...,WL, got %zu", nw,
                      pl.host_widths.size());
    scan->push_back(pl.host_widths);
  } else {
    std::vector<double> ws;
    size_t n = 0;
    if (!pl.user_widths && am_record_get_vector(ds, "widths_scan", nullptr, 0, &n) == AM_OK && n > 0) {
      ws.resize(n);
      am_record_get_vector(ds, "widths_scan", ws.data(), n, &n);
    }
    if (!ws.empty() && nw > 0)
      for (double w : ws) scan->push_back(std::vector<double>(nw, w));
    else
      scan->emplace_back();
  }
  return AM_OK;
}

// The inputs of one run (plugin.h, estimate): the widths it sets (none: the dataset's own) and the spec's start.
am_status run_inputs(const am_run_spec *s, const std::vector<double> &widths, am_record *inputs) {
  if (!widths.empty()) AM_TRY(am_record_set_vector(inputs, "widths", widths.data(), widths.size()));
  if (s->start) AM_TRY(am_record_set_copy(inputs, "start", s->start));
  return AM_OK;
}

// N of a run: the largest of its widths (its inputs', else the dataset's); NaN without widths.
double run_width(const am_record *ds, const am_record *inputs) {
  const am_record *src = am_record_get(inputs, "widths") ? inputs : ds;
  double w[AM_MAX_LAYERS + 1];
  size_t n = 0;
  if (!src || am_record_get_vector(src, "widths", w, AM_MAX_LAYERS + 1, &n) != AM_OK || n == 0) return NAN;
  return *std::max_element(w, w + n);
}

am_host make_host(am_context *ctx, const Plan &pl, const am_record *params, uint64_t stream) {
  am_host h;
  am_host_init(&h, ctx, params, pl.seed, stream, pl.threads);
  return h;
}

std::string error_text(am_context *ctx, am_status st) {
  const char *m = am_context_last_error(ctx);
  return m && *m ? std::string(m) : std::string(am_status_string(st));
}

const char *run_status_name(am_status st) {
  switch (st) {
    case AM_OK:
    case AM_CONVERGED_ROUNDOFF: return "ok";
    case AM_CANCELLED: return "cancelled";
    case AM_ERR_NOT_CONVERGED: return "not_converged";
    default: return "error";
  }
}

// Paths of the non-finite scalar numbers under n (arrays are left alone: NaN may pad them on purpose).
void nonfinite_paths(const am_record *n, const std::string &at, std::vector<std::string> *out) {
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_NUMBER && !std::isfinite(am_record_number(n))) out->push_back(at);
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *k = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
    const std::string name = k ? std::string(k) : std::to_string(i);
    nonfinite_paths(am_record_at(n, i), at.empty() ? name : at + "." + name, out);
  }
}

// A successful run is a "warning" when the estimator listed warnings (run key `warnings`, strings: e.g. a
// sampler's R-hat above its bound) or when a number it wrote is not finite (a null in results.json is never
// called ok). The non-finite places join the run's `warnings` and the log (the estimator logs its own); the
// count of all is returned.
am_status collect_warnings(am_context *ctx, am_record *run, size_t *count) {
  std::vector<std::string> bad;
  nonfinite_paths(run, "", &bad);
  am_record *w = am_record_get_mut(run, "warnings");
  if (!bad.empty() && (!w || am_record_type_of(w) != AM_REC_LIST)) {
    if (w) am_record_remove(run, "warnings");
    if (!(w = am_record_list(run, "warnings"))) return AM_ERR_NO_MEMORY;
  }
  for (const std::string &b : bad) {
    am_context_log(ctx, AM_LOG_WARN, "non-finite value at %s", b.c_str());
    if (am_status st = am_record_append_string(w, ("non-finite value at " + b).c_str())) return st;
  }
  *count = w && am_record_type_of(w) == AM_REC_LIST ? am_record_size(w) : 0;
  return AM_OK;
}

// State of a whole execution, shared by its steps.
struct Exec {
  am_context *ctx;
  const am_registry *reg;
  const am_run_spec *spec;
  Plan pl;
  clock_type::time_point t0 = clock_type::now();
  am::sdk::Record doc, dataset;
  am_record *runs = nullptr;
  am_host est_host{};  // the estimator's host and instance: made once, for every run of the scan
  Instance est;
  bool failed = false, cancelled = false, not_converged = false, warned = false;
  am_status fail_status = AM_OK;
};

// The document's leading keys, in schema order (task_extras and runs are filled later in place).
am_status doc_header(Exec &e, am_record **extras) {
  am_record *d = e.doc.get();
  AM_TRY(am_record_set_string(d, "attnmech_version", am_version()));
  AM_TRY(am_record_set_number(d, "schema_version", AM_RESULTS_SCHEMA_VERSION));
  AM_TRY(e.pl.task ? am_record_set_string(d, "task", e.pl.task->name) : am_record_set_null(d, "task"));
  AM_TRY(am_record_set_string(d, "estimator", e.pl.est->name));
  am_record *plugins = am_record_object(d, "plugins");
  if (!plugins) return AM_ERR_NO_MEMORY;
  if (e.pl.task) AM_TRY(am_record_set_string(plugins, "task", plugin_path(e.reg, e.pl.task)));
  AM_TRY(am_record_set_string(plugins, "estimator", plugin_path(e.reg, e.pl.est)));
  AM_TRY(am_record_set_number(d, "seed", static_cast<double>(e.pl.seed)));
  AM_TRY(am_record_set_number(d, "threads", e.pl.threads));
  // BLAS's process-wide thread count as the run started (0: not OpenBLAS, unknown). Reductions inside BLAS
  // may group sums differently with more threads: the last bits of theory figures and the trajectories of
  // posterior chains depend on it (docs/reliability.md "Determinism").
  AM_TRY(am_record_set_number(d, "blas_threads", am_blas_threads_set(0)));
  am_record *params = am_record_object(d, "params");
  if (!params) return AM_ERR_NO_MEMORY;
  AM_TRY(am_record_set_copy(params, "task", e.pl.task_params.get()));
  AM_TRY(am_record_set_copy(params, "estimator", e.pl.est_params.get()));
  *extras = am_record_object(d, "task_extras");
  e.runs = am_record_list(d, "runs");
  return *extras && e.runs ? AM_OK : AM_ERR_NO_MEMORY;
}

// Creates the task and makes the dataset (read-only from then on: per-run inputs travel beside it).
am_status run_task(Exec &e, am_record *extras) {
  if (!e.pl.task) return AM_OK;
  AM_TRY(am_record_create(e.dataset.out()));
  // The host key `widths` reaches the task as a `widths` entry of its params (plugin.h), so a task that knows
  // its depth refuses a wrong length in create, before it makes any data (checked again after make_dataset).
  am::sdk::Record tp;
  const am_record *task_params = e.pl.task_params.get();
  if (!e.pl.host_widths.empty() && e.spec->widths.empty() && !has_param(e.pl.task, "widths")) {  // --width wins
    AM_TRY(am_record_clone(e.pl.task_params.get(), tp.out()));
    AM_TRY(am_record_set_vector(tp.get(), "widths", e.pl.host_widths.data(), e.pl.host_widths.size()));
    task_params = tp.get();
  }
  am_host th = make_host(e.ctx, e.pl, task_params, 1);
  Instance ti;
  ti.d = e.pl.task;
  am_context_set_scope(e.ctx, e.pl.task->name);
  am_status st = e.pl.task->create(&th, &ti.inst);
  if (st >= 0) st = e.pl.task->make_dataset(ti.inst, e.dataset.get(), extras);
  if (st == AM_CANCELLED || am_context_cancelled(e.ctx)) {
    e.cancelled = true;
    return AM_OK;
  }
  if (st < 0) return am::fail(e.ctx, st, "task '%s': %s", e.pl.task->name, error_text(e.ctx, st).c_str());
  return AM_OK;
}

// The estimator's instance, created at the first run (seed stream 2) and kept for the whole scan.
am_status estimator_instance(Exec &e) {
  if (e.est.inst) return AM_OK;
  e.est_host = make_host(e.ctx, e.pl, e.pl.est_params.get(), 2);
  e.est.d = e.pl.est;
  return e.pl.est->create(&e.est_host, &e.est.inst);
}

// The run's entry after the estimator returned st: its status, error, width and time; the execution's flags.
am_status finish_run(Exec &e, am_record *run, am_status st, double width, double secs) {
  std::string err;
  if (st < 0 && st != AM_ERR_NOT_CONVERGED) err = error_text(e.ctx, st);
  size_t warnings = 0;
  if (st >= 0 && st != AM_CANCELLED) AM_TRY(collect_warnings(e.ctx, run, &warnings));
  e.warned = e.warned || warnings > 0;
  AM_TRY(am_record_set_string(run, "run_status", warnings ? "warning" : run_status_name(st)));
  if (!err.empty()) AM_TRY(am_record_set_string(run, "error", err.c_str()));
  if (std::isfinite(width)) AM_TRY(am_record_set_number(run, "width", width));
  AM_TRY(am_record_set_number(run, "wall_time_s", secs));
  am_context_log(e.ctx, st < 0 && st != AM_ERR_NOT_CONVERGED ? AM_LOG_ERROR : AM_LOG_INFO, "%s (%.2f s)%s%s",
                 warnings ? "warning" : run_status_name(st), secs, err.empty() ? "" : "  ", err.c_str());
  if (st == AM_CANCELLED) e.cancelled = true;
  if (st == AM_ERR_NOT_CONVERGED) e.not_converged = true;
  if (st < 0 && st != AM_ERR_NOT_CONVERGED) {
    e.failed = true;
    e.fail_status = st;
    am::fail(e.ctx, st, "%s: %s", e.pl.est->name, err.c_str());
  }
  return AM_OK;
}

// One estimator run into a new entry of "runs".
am_status run_one(Exec &e, size_t r, size_t nruns, const std::vector<double> &widths) {
  const auto t0 = clock_type::now();
  am::sdk::Record inputs;
  AM_TRY(am_record_create(inputs.out()));
  AM_TRY(run_inputs(e.spec, widths, inputs.get()));
  const double width = run_width(e.dataset.get(), inputs.get());
  std::string scope = am::format("run %zu/%zu", r + 1, nruns);
  if (!widths.empty()) scope += am::format(" N=%g", width);
  am_context_set_scope(e.ctx, scope.c_str());
  am_record *run = am_record_append_object(e.runs);
  if (!run) return AM_ERR_NO_MEMORY;
  am_status st = estimator_instance(e);
  if (st >= 0) st = e.pl.est->estimate(e.est.inst, e.dataset.get(), inputs.get(), run);
  // A run stopped by cancel is partial even if the estimator went on after its own work stopped.
  if (st >= 0 && st != AM_CANCELLED && am_context_cancelled(e.ctx)) st = AM_CANCELLED;
  const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  return finish_run(e, run, st, width, secs);
}

am_status describe_into(am_context *ctx, const am_registry *reg, am_record *doc) {
  am_record_remove(doc, "report");
  am_record *report = am_record_object(doc, "report");  // filled in place, after every other key
  if (!report || !am_record_list(report, "plots") || !am_record_list(report, "summary")) return AM_ERR_NO_MEMORY;
  // Documents written before runs carried `width` (schema 1): add it, the x of plots over a width scan.
  am_record *runs = am_record_get_mut(doc, "runs");
  for (size_t i = 0; i < am_record_size(runs); ++i) {
    am_record *run = const_cast<am_record *>(am_record_at(runs, i));
    double w[AM_MAX_LAYERS + 1];
    size_t n = 0;
    if (am_record_get(run, "width") || am_record_get_vector(run, "widths", w, AM_MAX_LAYERS + 1, &n) != AM_OK || !n)
      continue;
    AM_TRY(am_record_set_number(run, "width", *std::max_element(w, w + n)));
  }
  // The estimator's blocks first (its table leads the summary), the task's extras last.
  const char *names[2] = {nullptr, nullptr};
  am_record_get_string(doc, "estimator", &names[0]);
  am_record_get_string(doc, "task", &names[1]);
  const uint32_t kinds[2] = {AM_PLUGIN_ESTIMATOR, AM_PLUGIN_TASK};
  for (int k = 0; k < 2; ++k) {
    if (!names[k]) continue;
    const am_plugin_desc *d = am_registry_find(reg, names[k], kinds[k]);
    auto fn = d ? am::describe_of(d) : nullptr;
    if (!fn) continue;
    const am_status st = fn(ctx, doc, report);
    if (st < 0) {
      am_record_remove(doc, "report");  // no half-made report in the document
      return am::fail(ctx, st, "%s '%s': describe: %s", kind_word(kinds[k]), names[k], error_text(ctx, st).c_str());
    }
  }
  return AM_OK;
}

am_status execute(Exec &e, am_record **results) {
  am_status st = make_plan(e.ctx, e.reg, e.spec, &e.pl);
  if (st != AM_OK) return st;
  AM_TRY(am_record_create(e.doc.out()));
  am_record *extras = nullptr;
  AM_TRY(doc_header(e, &extras));
  st = run_task(e, extras);
  std::vector<std::vector<double>> scan;
  if (st == AM_OK && !e.cancelled) st = plan_scan(e.ctx, e.spec, e.pl, e.dataset.get(), &scan);
  if (st < 0) {
    am_context_set_scope(e.ctx, nullptr);
    return st;
  }
  for (size_t r = 0; r < scan.size() && !e.cancelled && !e.failed; ++r) AM_TRY(run_one(e, r, scan.size(), scan[r]));
  am_context_set_scope(e.ctx, nullptr);
  am_record *d = e.doc.get();
  AM_TRY(am_record_set_string(d, "status", e.failed ? "error" : e.cancelled ? "cancelled"
                                                                  : e.not_converged ? "not_converged"
                                                                  : e.warned ? "warning" : "ok"));
  AM_TRY(am_record_set_number(d, "wall_time_s", std::chrono::duration<double>(clock_type::now() - e.t0).count()));
  const std::string keep = am_context_last_error(e.ctx);
  st = describe_into(e.ctx, e.reg, d);
  if (st < 0) am_context_log(e.ctx, AM_LOG_WARN, "no plots or summary: %s", am_context_last_error(e.ctx));
  if (e.failed) am::fail(e.ctx, e.fail_status, "%s", keep.c_str());
  *results = e.doc.release();
  if (e.failed) return e.fail_status;
  if (e.cancelled) return AM_CANCELLED;
  return e.not_converged ? AM_ERR_NOT_CONVERGED : AM_OK;
}

}  // namespace

extern "C" {

am_status am_run_spec_create(am_run_spec **out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  *out = new (std::nothrow) am_run_spec();
  return *out ? AM_OK : AM_ERR_NO_MEMORY;
}

void am_run_spec_destroy(am_run_spec **spec) {
  if (!spec || !*spec) return;
  delete *spec;
  *spec = nullptr;
}

am_status am_run_spec_set_task(am_run_spec *spec, const char *task) {
  if (!spec) return AM_ERR_INVALID_ARGUMENT;
  AM_GUARD(nullptr, {
    spec->task = task ? task : "";
    return AM_OK;
  });
}

am_status am_run_spec_set_estimator(am_run_spec *spec, const char *estimator) {
  if (!spec) return AM_ERR_INVALID_ARGUMENT;
  AM_GUARD(nullptr, {
    spec->estimator = estimator ? estimator : "";
    return AM_OK;
  });
}

am_status am_run_spec_set(am_run_spec *spec, const char *key, const char *value) {
  if (!spec || !key || !*key || !value) return AM_ERR_INVALID_ARGUMENT;
  AM_GUARD(nullptr, {
    spec->sets.emplace_back(key, value);
    return AM_OK;
  });
}

am_status am_run_spec_set_widths(am_run_spec *spec, const double *widths, size_t n) {
  if (!spec || (n > 0 && !widths)) return AM_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; ++i)
    if (!(widths[i] >= 1 && widths[i] <= 1e12) || widths[i] != std::floor(widths[i])) return AM_ERR_DOMAIN;
  AM_GUARD(nullptr, {
    spec->widths.assign(widths, widths + n);
    return AM_OK;
  });
}

am_status am_run_spec_set_start(am_run_spec *spec, const am_record *state) {
  if (!spec) return AM_ERR_INVALID_ARGUMENT;
  am_record *copy = nullptr;
  if (state) {
    const am_status st = am_record_clone(state, &copy);
    if (st != AM_OK) return st;
  }
  am_record_destroy(&spec->start);
  spec->start = copy;
  return AM_OK;
}

am_status am_run_validate(am_context *ctx, const am_registry *registry, const am_run_spec *spec) {
  AM_GUARD(ctx, {
    Plan pl;
    return make_plan(ctx, registry, spec, &pl);
  });
}

am_status am_run_execute(am_context *ctx, const am_registry *registry, const am_run_spec *spec,
                         am_record **results) {
  if (!results) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_run_execute: NULL results");
  *results = nullptr;
  AM_GUARD(ctx, {
    const am_status as = am_address_space_check(ctx);  // before OpenBLAS could spin on its buffers
    if (as != AM_OK) return as;
    Exec e{ctx, registry, spec};
    return execute(e, results);
  });
}

am_status am_run_describe(am_context *ctx, const am_registry *registry, am_record *results) {
  if (!registry || !results) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_run_describe: NULL argument");
  AM_GUARD(ctx, { return describe_into(ctx, registry, results); });
}

}  // extern "C"
