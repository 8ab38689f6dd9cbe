// attnmech sweep — running points: one point = one am_run_execute written by am_report_write into
// DIR/points/<key>/ (atomic: temporary sibling, then rename), then point.json; warm starts between consecutive
// points of a worker that differ only on warm axes; the thread farm; progress lines; cancel on stop signals.
#include "sweep.hpp"

#include <attnmech/host.hpp>
#include <attnmech/report.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

namespace am::sweep {

std::atomic<int> g_stop{0};

namespace {

constexpr size_t kMaxContexts = 256;
std::atomic<am_context *> g_contexts[kMaxContexts];

std::mutex g_err_mutex;  // stderr lines from several threads

extern "C" void worker_log(void *user, am_log_level level, const char *msg) {
  const auto *quiet = static_cast<const bool *>(user);
  if (level < AM_LOG_WARN || (*quiet && level < AM_LOG_ERROR)) return;
  std::lock_guard<std::mutex> lock(g_err_mutex);
  std::fprintf(stderr, "%s%s\n", level == AM_LOG_ERROR ? "error: " : "warning: ", msg ? msg : "");
}

// A point that runs for minutes (many realisations, long sampling) would leave a sweep silent: a line
// with the run's own progress label every 30 s (not with --quiet; stderr, so also when piped).
// AM_SWEEP_PROGRESS_SECONDS changes the interval (tests/sweep: 0 = every report).
std::chrono::duration<double> progress_every() {
  static const double s = [] {
    const char *e = std::getenv("AM_SWEEP_PROGRESS_SECONDS");
    char *end = nullptr;
    const double v = e ? std::strtod(e, &end) : 30.0;
    return e && end != e && v >= 0 ? v : 30.0;
  }();
  return std::chrono::duration<double>(s);
}

std::string doc_status(const am_record *doc) {
  const char *s = nullptr;
  return am_record_get_string(doc, "status", &s) == AM_OK && s ? s : "error";
}

// Newton iterations summed over the runs of a document (-1 when none is recorded).
long doc_iterations(const am_record *doc) {
  const am_record *runs = am_record_get(doc, "runs");
  long total = -1;
  for (size_t i = 0; runs && i < am_record_size(runs); ++i) {
    const am_record *solver = am_record_get(am_record_at(runs, i), "solver");
    double it = NAN;
    if (solver && am_record_get_number(solver, "iterations", &it) == AM_OK && std::isfinite(it))
      total = (total < 0 ? 0 : total) + static_cast<long>(it);
  }
  return total;
}

// {"U": [...]} of the last run of a document, NULL when it has none.
am_record *warm_state(const am_record *doc) {
  const am_record *runs = am_record_get(doc, "runs");
  if (!runs || am_record_size(runs) == 0) return nullptr;
  const am_record *U = am_record_get(am_record_at(runs, am_record_size(runs) - 1), "U");
  if (!U || am_record_type_of(U) != AM_REC_LIST) return nullptr;
  am_record *st = nullptr;
  if (am_record_create(&st) != AM_OK) return nullptr;
  if (am_record_set_copy(st, "U", U) != AM_OK) am_record_destroy(&st);
  return st;
}

// Whether two points differ only on warm axes.
bool warm_neighbours(const Spec &spec, const Point &a, const Point &b) {
  if (a.settings.size() != b.settings.size()) return false;
  for (size_t i = 0; i < a.settings.size(); ++i) {
    if (a.settings[i].first != b.settings[i].first) return false;
    if (a.settings[i].second != b.settings[i].second &&
        !std::count(spec.warm_axes.begin(), spec.warm_axes.end(), a.settings[i].first))
      return false;
  }
  return true;
}

// The run spec of one point: the sweep's task and estimator, then the point's settings ("width" as the run's
// one width). Returns why the point cannot run ("" when it can).
std::string fill_run_spec(const Spec &spec, const Point &p, am_run_spec *rs) {
  am_run_spec_set_task(rs, spec.task.c_str());
  am_run_spec_set_estimator(rs, spec.estimator.c_str());
  for (const auto &kv : p.settings) {
    if (kv.first == "width") {
      char *end = nullptr;
      const double w = std::strtod(kv.second.c_str(), &end);
      if (!end || *end || !(w >= 1)) return "width '" + kv.second + "' is not a positive number";
      am_run_spec_set_widths(rs, &w, 1);
    } else {
      am_run_spec_set(rs, kv.first.c_str(), kv.second.c_str());
    }
  }
  return std::string();
}

// A point whose run did not start: the failure recorded as a results document of its own.
am::sdk::Record failure_document(const std::string &failure) {
  am::sdk::Record doc;
  if (am_record_create(doc.out()) != AM_OK) throw SweepError("out of memory");
  am_record_set_string(doc.get(), "attnmech_version", am_version());
  am_record_set_string(doc.get(), "status", "error");
  am_record_set_string(doc.get(), "error", failure.empty() ? "failed" : failure.c_str());
  return doc;
}

}  // namespace

const char *outcome_name(Outcome o) {
  switch (o) {
    case Outcome::ok: return "ok";
    case Outcome::warning: return "warning";
    case Outcome::failed: return "FAILED";
    case Outcome::cancelled: return "cancelled";
    case Outcome::skipped: return "complete";
    case Outcome::held: return "held";
  }
  return "?";
}

void register_cancel(am_context *ctx) {
  for (auto &slot : g_contexts) {
    am_context *expected = nullptr;
    if (slot.compare_exchange_strong(expected, ctx)) break;
  }
  if (g_stop.load()) am_context_cancel(ctx);
}
void unregister_cancel(am_context *ctx) {
  for (auto &slot : g_contexts) {
    am_context *expected = ctx;
    if (slot.compare_exchange_strong(expected, nullptr)) break;
  }
}
void cancel_all() {
  for (auto &slot : g_contexts) {
    am_context *c = slot.load();
    if (c) am_context_cancel(c);
  }
}

Worker::Worker(const am_registry *reg, const Spec &spec, const std::vector<Point> &points, const std::string &out,
               bool quiet, bool recompute)
    : reg_(reg), spec_(spec), points_(points), out_(out), quiet_(quiet), recompute_(recompute) {
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.log = worker_log;
  cs.log_user = &quiet_;
  cs.threads = 1;  // the run's own `threads` setting decides (run API host key)
  // Every point is this process's own: an estimator never spreads one over the MPI ranks of a farm, whose ranks
  // each run points of their own (docs/scale.md "One solve across machines").
  cs.distribute = AM_DISTRIBUTE_OFF;
  cs.progress = worker_progress;
  cs.progress_user = this;
  if (am_context_create(&ctx_, &cs) != AM_OK) throw SweepError("cannot create a library context");
  register_cancel(ctx_);
}

int worker_progress(void *user, double done, double total, const char *label) {
  auto *w = static_cast<Worker *>(user);
  if (w->quiet_ || w->running_key_.empty()) return 0;
  const auto now = std::chrono::steady_clock::now();
  if (now - w->reported_ < progress_every()) return 0;
  w->reported_ = now;
  const double secs = std::chrono::duration<double>(now - w->started_).count();
  std::lock_guard<std::mutex> lock(g_err_mutex);
  if (total > 0)
    std::fprintf(stderr, "[sweep] %s running %.0f s: %s %.0f / %.0f\n", w->running_key_.c_str(), secs,
                 label ? label : "", done, total);
  else
    std::fprintf(stderr, "[sweep] %s running %.0f s: %s\n", w->running_key_.c_str(), secs, label ? label : "");
  return 0;
}

Worker::~Worker() {
  unregister_cancel(ctx_);
  am_record_destroy(&warm_);
  am_context_destroy(&ctx_);
}

// Whether point i needs no run here: cancelled, complete already, or claimed by another sweep (r says which).
bool Worker::settled(size_t i, Result &r) {
  const Point &p = points_[i];
  r.point = i;
  if (g_stop.load()) {
    r.outcome = Outcome::cancelled;
    return true;
  }
  std::string done_status;
  if (!recompute_ && point_complete(out_, p, &done_status)) {  // done before, or meanwhile by another sweep on DIR
    ensure_point_json(out_, p, done_status);
    r.outcome = Outcome::skipped;
    return true;
  }
  std::string holder;
  if (!try_claim(out_, p, &holder)) {
    r.outcome = Outcome::held;
    r.message = holder;
    return true;
  }
  return false;
}

// Validate and execute point i's run (warm-started from the previous point when they are warm neighbours).
// Returns the run's status; `failure` says why it failed, *doc holds its document when it started.
am_status Worker::execute(size_t i, am_record **doc, std::string &failure) {
  const Point &p = points_[i];
  am::sdk::RunSpec spec;
  if (am_run_spec_create(spec.out()) != AM_OK) throw SweepError("out of memory");
  failure = fill_run_spec(spec_, p, spec.get());
  const bool warm = spec_.warm_start && warm_ && last_point_ >= 0 &&
                    warm_neighbours(spec_, points_[static_cast<size_t>(last_point_)], p);
  if (warm) am_run_spec_set_start(spec.get(), warm_);
  am_status st = AM_OK;
  if (failure.empty() && (st = am_run_validate(ctx_, reg_, spec.get())) != AM_OK) failure = am_context_last_error(ctx_);
  if (failure.empty()) {
    running_key_ = p.key;
    started_ = reported_ = std::chrono::steady_clock::now();
    st = am_run_execute(ctx_, reg_, spec.get(), doc);
    running_key_.clear();
    if (!*doc) failure = am_context_last_error(ctx_);
    if (failure.empty() && st < 0 && st != AM_ERR_NOT_CONVERGED && st != AM_CANCELLED)
      failure = am_context_last_error(ctx_);
    if (failure.empty() && st == AM_ERR_NOT_CONVERGED) failure = "the solver did not converge";
  }
  return st;
}

Result Worker::run(size_t i) {
  const Point &p = points_[i];
  Result r;
  if (settled(i, r)) return r;
  const auto t0 = std::chrono::steady_clock::now();
  am::sdk::Record doc;
  std::string failure;
  const am_status st = execute(i, doc.out(), failure);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();  // refined below
  if (st == AM_CANCELLED || g_stop.load()) {  // interrupted: nothing written, redone next time
    release_claim(out_, p);
    r.outcome = Outcome::cancelled;
    return r;
  }
  if (!doc) doc = failure_document(failure);
  r.status = doc_status(doc.get());
  r.iterations = doc_iterations(doc.get());
  r.outcome = r.status == "ok" ? Outcome::ok : r.status == "warning" ? Outcome::warning : Outcome::failed;
  if (r.outcome == Outcome::failed) r.message = failure.empty() ? "status " + r.status : failure;
  am_report_write_options wo;
  am_report_write_default_options(&wo);
  wo.plots = 0;  // per-point plots: `attnmech plot DIR/points/<key>`
  mark_point(doc.get(), p);  // whose results these are: a results.json copied to another point is not complete there
  clear_point_dir(out_, p);
  if (am_report_write(ctx_, doc.get(), point_dir(out_, p).c_str(), &wo) != AM_OK) {
    const std::string msg = am_context_last_error(ctx_);
    release_claim(out_, p);
    throw SweepError("cannot write point " + p.key + ": " + msg);
  }
  write_point_json(out_, p, r.status, r.message);
  am_record_destroy(&warm_);
  if (spec_.warm_start && r.outcome != Outcome::failed) warm_ = warm_state(doc.get());
  last_point_ = static_cast<long>(i);
  release_claim(out_, p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();  // run + write
  return r;
}

void Progress::done(const Point &p, const Result &r) {
  ++done_;
  busy_ += r.seconds;
  if (quiet_ && (r.outcome == Outcome::ok || r.outcome == Outcome::warning || r.outcome == Outcome::skipped)) return;
  std::string axes;
  for (const auto &av : p.axis_values) axes += " " + av.first + "=" + value_text(av.second);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  char eta[48] = "";
  if (done_ < total_ && elapsed > 0)
    std::snprintf(eta, sizeof eta, ", ETA %.0f s", elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  std::lock_guard<std::mutex> lock(g_err_mutex);
  std::fprintf(stderr, "[sweep %zu/%zu] %s%s  %s%s%s (%.2f s%s%s)\n", done_, total_, p.key.c_str(), axes.c_str(),
               outcome_name(r.outcome), r.message.empty() ? "" : ": ", r.message.c_str(), r.seconds,
               r.rank ? (", rank " + std::to_string(r.rank)).c_str() : "", eta);
  std::fflush(stderr);
}

std::vector<Result> run_local(const am_registry *reg, const Spec &spec, const std::vector<Point> &points,
                              const std::vector<size_t> &todo, const std::string &out, int jobs, bool quiet,
                              bool recompute) {
  std::vector<Result> results;
  std::mutex m;
  std::atomic<size_t> next{0};
  Progress progress(todo.size(), quiet);
  std::string error;
  auto work = [&]() {
    try {
      Worker w(reg, spec, points, out, quiet, recompute);
      for (size_t k; (k = next.fetch_add(1)) < todo.size();) {
        Result r = w.run(todo[k]);
        std::lock_guard<std::mutex> lock(m);
        progress.done(points[r.point], r);
        results.push_back(r);
      }
    } catch (const std::exception &e) {
      std::lock_guard<std::mutex> lock(m);
      if (error.empty()) error = e.what();
      g_stop.store(-1);
      cancel_all();
    }
  };
  const size_t n = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(jobs, 1)), todo.size()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto &t : threads) t.join();
  if (!error.empty()) throw SweepError(error);
  return results;
}

}  // namespace am::sweep
