// attnmech CLI — `attnmech sweep SPEC --out DIR` and `attnmech sweep --aggregate DIR` (docs/sweep.md): parse the
// options, start MPI when launched by mpirun/srun, pick this process's points (shard, resume), hand them to the
// sweep engine (tools/sweep: threads or the MPI farm), aggregate, and say what happened (exit 1 if a point failed).
#include "cli.hpp"

#include <common/safe_file.hpp>
#include "sweep/sweep.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace am::cli {

namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string spec, out, aggregate_dir;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<std::string> plugins;
  size_t shard_k = 0, shard_n = 1;
  int jobs = 0;
  bool recompute = false, quiet = false, no_aggregate = false, list = false, dispatcher_only = false;
  int warm = -1;  // -1: as the SPEC says
  uint32_t plot_formats = 0;  // --plots: the report library's bits (0: its default)
};

void parse_shard(const std::string &s, SweepOptions *o) {
  const size_t slash = s.find('/');
  uint64_t k = 0, n = 0;
  if (slash == std::string::npos || !am::text::parse_u64(s.substr(0, slash), &k) ||
      !am::text::parse_u64(s.substr(slash + 1), &n) || n == 0 || k >= n)
    throw UsageError("bad --shard '" + s + "': expected k/n with 0 <= k < n (e.g. 0/4)", "sweep");
  o->shard_k = k;
  o->shard_n = n;
}

SweepOptions parse_sweep(Args &a) {
  SweepOptions o;
  Opt id;
  std::string val;
  while (!a.done()) {
    if (!a.option(CMD_SWEEP, &id, &val)) {
      if (!o.spec.empty() || a.is_option()) a.reject(" (SPEC is already '" + o.spec + "')");
      o.spec = a.v[a.i++];
      continue;
    }
    switch (id) {
      case Opt::Out: o.out = val; break;
      case Opt::Set: a.add_set(val, &o.sets); break;
      case Opt::Shard: parse_shard(val, &o); break;
      case Opt::Jobs: o.jobs = a.jobs(val); break;
      case Opt::Aggregate: o.aggregate_dir = val; break;
      case Opt::Plugin: o.plugins.push_back(val); break;
      case Opt::Recompute: o.recompute = true; break;
      case Opt::WarmStart: o.warm = 1; break;
      case Opt::NoWarmStart: o.warm = 0; break;
      case Opt::NoAggregate: o.no_aggregate = true; break;
      case Opt::DispatcherOnly: o.dispatcher_only = true; break;
      case Opt::List: o.list = true; break;
      case Opt::Quiet: o.quiet = true; break;
      case Opt::Plots: o.plot_formats = plots_option(val, "sweep"); break;
      default: throw RuntimeError("no handler for an option of `sweep`");  // the table and this switch disagree
    }
  }
  if (!o.aggregate_dir.empty()) {
    if (!o.out.empty() && o.out != o.aggregate_dir) throw UsageError("--aggregate DIR takes no other --out", "sweep");
    return o;
  }
  if (o.spec.empty() && o.list) return o;  // the shipped specs
  if (o.spec.empty())
    throw UsageError("missing SPEC (a sweep file, or the name of a shipped one: see 'attnmech sweep --list')", "sweep");
  if (o.out.empty() && !o.list) throw UsageError("missing --out DIR", "sweep");
  return o;
}

// Where the shipped specs are: the install's <prefix>/share/attnmech/sweeps (found relative to this executable),
// then the source tree's examples/sweeps (a build-tree executable).
std::vector<std::string> spec_dirs() {
  std::vector<char> buf(PATH_MAX + 1, 0);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), PATH_MAX);
  std::vector<std::string> dirs;
  if (n > 0) dirs.push_back(fs::path(std::string(buf.data(), static_cast<size_t>(n))).parent_path() / AM_SWEEPS_REL_DIR);
  dirs.push_back(AM_SWEEPS_SOURCE_DIR);
  return dirs;
}

// `sweep --list` without SPEC: the shipped specs of the first directory that has any, name and description
// (the names bash completes after `sweep`).
int list_specs() {
  std::error_code ec;
  for (const auto &d : spec_dirs()) {
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::printf("%-26s %s\n", "NAME", "DESCRIPTION");
    for (const auto &f : files) {
      std::string about;
      try {
        about = nlohmann::json::parse(std::ifstream(f)).value("description", "");
      } catch (const std::exception &) {
        about = "(not a readable spec)";
      }
      std::printf("%-26s %s\n", f.stem().string().c_str(), about.c_str());
    }
    std::printf("(%zu specs in %s; run one: attnmech sweep NAME --out DIR)\n", files.size(), d.c_str());
    return EXIT_OK;
  }
  throw RuntimeError("no sweep specs found (searched " + spec_dirs()[0] + " and " + spec_dirs()[1] + ")");
}

// SPEC as given when it is a file; else a shipped spec by name ("NAME" or "NAME.json") in spec_dirs().
std::string resolve_spec(const std::string &spec) {
  std::error_code ec;
  if (fs::is_regular_file(spec, ec) || spec.find('/') != std::string::npos) return spec;
  for (const auto &d : spec_dirs())
    for (const std::string &name : {spec, spec + ".json"})
      if (fs::is_regular_file(d + "/" + name, ec)) return d + "/" + name;
  return spec;
}

extern "C" void on_sweep_signal(int sig) {
  int expected = 0;
  am::sweep::g_stop.compare_exchange_strong(expected, sig);
  am::sweep::cancel_all();
  std::signal(sig, SIG_DFL);  // a second signal ends the process at once
}

void catch_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// DIR must be a sweep directory, empty, or absent (then created here, before any point runs): never scatter
// points/ into an unrelated directory.
void check_out(const std::string &out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return prepare_out_dir("--out " + out, out);
  if (!fs::is_directory(out, ec)) throw RuntimeError("--out " + out + " exists and is not a directory");
  for (const char *mark : {"/spec.json", "/points", "/claims"})
    if (fs::exists(out + mark, ec)) return;
  if (fs::is_empty(out, ec)) return;
  throw RuntimeError("--out " + out + " is a non-empty directory that holds no sweep (no spec.json, no points/)");
}

// Every point is validated (nothing computed); when none passes, the SPEC itself is wrong: a usage error.
void validate(Host &h, const am::sweep::Spec &spec, const std::vector<am::sweep::Point> &pts) {
  std::string first;
  for (const auto &p : pts) {
    am_run_spec *rs = nullptr;
    if (am_run_spec_create(&rs) != AM_OK) throw RuntimeError("out of memory");
    am_run_spec_set_task(rs, spec.task.c_str());
    am_run_spec_set_estimator(rs, spec.estimator.c_str());
    for (const auto &kv : p.settings)
      if (kv.first != "width") am_run_spec_set(rs, kv.first.c_str(), kv.second.c_str());
    const am_status st = am_run_validate(h.ctx, h.reg, rs);
    am_run_spec_destroy(&rs);
    if (st == AM_OK) return;
    if (first.empty()) first = h.error(st);
  }
  if (!pts.empty()) throw UsageError("no point of the SPEC is valid; the first says: " + first, "sweep");
}

void list_points(const am::sweep::Spec &spec, const std::vector<am::sweep::Point> &pts, const std::vector<size_t> &order) {
  for (size_t i : order) {
    std::printf("%s  cost %-10.4g", pts[i].key.c_str(), pts[i].cost);
    for (const auto &av : pts[i].axis_values) std::printf(" %s=%s", av.first.c_str(), am::sweep::value_text(av.second).c_str());
    std::printf("\n");
  }
  std::printf("%zu points (task %s%s%s)\n", order.size(), spec.task.empty() ? "-" : spec.task.c_str(),
              spec.estimator.empty() ? "" : ", estimator ", spec.estimator.c_str());
}

int report_aggregate(Host &h, const am::sweep::Spec &spec, const std::vector<am::sweep::Point> &pts, const std::string &out,
                     const SweepOptions &o) {
  const bool quiet = o.quiet;
  const auto st = am::sweep::aggregate(h.ctx, spec, pts, out, o.plot_formats);
  if (!quiet)
    std::printf("aggregate: %zu points, %zu complete, %zu failed, %zu missing → %s/sweep.json, sweep.csv, %zu plots in "
                "%s/plots/\n",
                st.points, st.complete, st.failed, st.missing, out.c_str(), st.plots, out.c_str());
  note_plot_formats(st.plots);
  return st.complete == st.points ? EXIT_OK : EXIT_RUNTIME;
}

int cmd_aggregate(const SweepOptions &o) {
  Host h;
  h.open();
  const std::string spec_path = o.spec.empty() ? o.aggregate_dir + "/spec.json" : o.spec;
  am::sweep::Spec spec;
  try {
    spec = am::sweep::read_spec_file(spec_path, o.spec.empty() ? decltype(o.sets){} : o.sets);
  } catch (const am::sweep::SpecError &e) {
    throw UsageError(e.what(), "sweep");
  }
  return report_aggregate(h, spec, am::sweep::expand(spec), o.aggregate_dir, o);
}

struct Tally {
  size_t ok = 0, warning = 0, failed = 0, cancelled = 0, skipped = 0, held = 0;
};

int verdict(const std::vector<am::sweep::Result> &results, size_t complete_before, size_t total, int agg) {
  Tally t;
  for (const auto &r : results) {
    switch (r.outcome) {
      case am::sweep::Outcome::ok: ++t.ok; break;
      case am::sweep::Outcome::warning: ++t.warning; break;
      case am::sweep::Outcome::failed: ++t.failed; break;
      case am::sweep::Outcome::cancelled: ++t.cancelled; break;
      case am::sweep::Outcome::skipped: ++t.skipped; break;
      case am::sweep::Outcome::held: ++t.held; break;
    }
  }
  std::fprintf(stderr,
               "sweep: %zu points: %zu run (%zu ok, %zu warning, %zu failed), %zu already complete, %zu held by another "
               "sweep, %zu not run (stopped)\n",
               total, t.ok + t.warning + t.failed, t.ok, t.warning, t.failed, complete_before + t.skipped, t.held,
               total - complete_before - t.skipped - t.ok - t.warning - t.failed - t.held);
  const int sig = am::sweep::g_stop.load();
  if (sig > 0) {
    std::fprintf(stderr, "attnmech: stopped by signal %d; completed points are kept, re-run the command to resume\n", sig);
    return 128 + sig;
  }
  if (t.failed) std::fprintf(stderr, "attnmech: error: %zu point(s) failed (status and message in DIR/sweep.json)\n", t.failed);
  if (t.held) std::fprintf(stderr, "attnmech: %zu point(s) are being computed by another sweep; re-run later\n", t.held);
  return t.failed || t.held || t.cancelled ? EXIT_RUNTIME : agg;
}

// The sweep of a parsed SPEC, on every rank (rank 0 of 1 without MPI).
int run_parsed(const SweepOptions &o, am::sweep::Spec spec, bool mpi, int rank, int size) {
  if (o.warm >= 0) spec.warm_start = o.warm == 1;
  std::vector<am::sweep::Point> pts;
  try {
    pts = am::sweep::expand(spec);
  } catch (const am::sweep::SpecError &e) {
    throw UsageError(e.what(), "sweep");
  }
  std::vector<size_t> order;  // this shard's points, in schedule order
  const auto all = am::sweep::schedule(spec, pts);
  for (size_t k = 0; k < all.size(); ++k)
    if (k % o.shard_n == o.shard_k) order.push_back(all[k]);
  Host h;
  h.sinks.quiet = o.quiet || rank != 0;
  h.open();
  h.load(o.plugins, true);
  if (rank == 0) h.report_load_problems(o.quiet);
  validate(h, spec, pts);
  if (o.list) {
    if (rank == 0) list_points(spec, pts, order);
    return EXIT_OK;
  }
  if (rank == 0) {
    check_out(o.out);
    am::sweep::write_spec_json(o.out, spec);
  }
  size_t complete = 0;
  std::vector<size_t> todo;
  if (rank == 0) am::files::remove_stale_temps(o.out + "/points");  // of writers killed before they finished
  for (size_t i : order) {
    const am::sweep::PointCheck c = o.recompute ? am::sweep::PointCheck{} : am::sweep::check_point(o.out, pts[i]);
    if (c.complete) {
      ++complete;
      if (rank == 0) am::sweep::ensure_point_json(o.out, pts[i], c.status), am::sweep::drop_stale_claim(o.out, pts[i]);
    } else {
      todo.push_back(i);
      if (rank == 0 && !c.problem.empty())  // a corrupted point is computed again, and said so
        std::fprintf(stderr, "attnmech: warning: point %s: %s; it is run again\n", pts[i].key.c_str(), c.problem.c_str());
    }
  }
  catch_signals();
  if (rank == 0 && !o.quiet)
    std::fprintf(stderr, "sweep: %zu points%s, %zu complete, %zu to run%s\n", order.size(),
                 o.shard_n > 1 ? (" in shard " + std::to_string(o.shard_k) + "/" + std::to_string(o.shard_n)).c_str() : "",
                 complete, todo.size(), mpi ? (" on " + std::to_string(size) + " MPI ranks").c_str() : "");
  std::vector<am::sweep::Result> results;
  if (mpi) {
    results = am::sweep::run_mpi(h.reg, spec, pts, todo, o.out, o.quiet, o.recompute, !o.dispatcher_only, rank, size);
    if (rank != 0) return EXIT_OK;
  } else {
    int jobs = o.jobs;
    if (jobs == 0) {
      auto it = std::find_if(spec.fixed.begin(), spec.fixed.end(), [](const auto &f) { return f.first == "threads"; });
      const bool single = it != spec.fixed.end() && am::sweep::value_text(it->second) == "1";
      jobs = single ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : 1;
    }
    results = am::sweep::run_local(h.reg, spec, pts, todo, o.out, jobs, o.quiet, o.recompute);
  }
  int agg = EXIT_OK;
  if (!o.no_aggregate && o.shard_n == 1 && am::sweep::g_stop.load() <= 0) agg = report_aggregate(h, spec, pts, o.out, o);
  else if (o.shard_n > 1 && !o.quiet)
    std::fprintf(stderr, "sweep: shard done; merge the shards with 'attnmech sweep --aggregate %s'\n", o.out.c_str());
  return verdict(results, complete, order.size(), agg);
}

// The sweep proper, on every rank (rank 0 of 1 without MPI).
int run_sweep(const SweepOptions &o, bool mpi, int rank, int size) {
  am::sweep::Spec spec;
  try {
    spec = am::sweep::read_spec_file(resolve_spec(o.spec), o.sets);
  } catch (const am::sweep::SpecError &e) {
    throw UsageError(e.what(), "sweep");
  }
  return run_parsed(o, std::move(spec), mpi, rank, size);
}

}  // namespace

int sweep_parsed(const am::sweep::Spec &spec, const SweepJob &job, bool mpi, int rank, int size) {
  SweepOptions o;
  o.out = job.out;
  o.plugins = job.plugins;
  o.jobs = job.jobs;
  o.quiet = job.quiet;
  o.recompute = job.recompute;
  o.plot_formats = job.plot_formats;
  return run_parsed(o, spec, mpi, rank, size);
}

int cmd_sweep(Args &a) {
  SweepOptions o = parse_sweep(a);
  if (!o.aggregate_dir.empty()) return cmd_aggregate(o);
  if (o.spec.empty()) return list_specs();  // --list without SPEC
  int rank = 0, size = 1;
  if (!am::sweep::mpi_start(nullptr, nullptr, &rank, &size)) return run_sweep(o, false, 0, 1);
  // Under MPI an error on one rank must end them all (the others would wait for it forever): say it, then abort.
  int code = EXIT_OK;
  try {
    code = run_sweep(o, true, rank, size);
  } catch (const UsageError &e) {
    if (rank == 0)  // every rank reads the same SPEC and options: one message is enough
      std::fprintf(stderr, "attnmech: usage error: %s\n(see 'attnmech sweep --help')\n", e.what());
    code = -EXIT_USAGE;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "attnmech: error (rank %d): %s\n", rank, e.what());
    code = -EXIT_RUNTIME;
  }
  if (code < 0) am::sweep::mpi_abort(-code);
  am::sweep::mpi_stop();
  return code;
}

}  // namespace am::cli
