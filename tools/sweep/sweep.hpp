// attnmech sweep engine (docs/sweep.md): a grid of runs of the library's run API, one results directory per
// point, resumable, on threads, on MPI ranks or in shards. Used by tools/cli_sweep.cpp; knows no plugin.
//
//   spec.cpp       the SPEC file → points (product of axes, zip groups, seed ranges), keys, cost order, shards
//   store.cpp      DIR/points/<key>/: completeness, point.json, per-point claim files
//   runner.cpp     one point: run spec → am_run_execute → am_report_write; the thread farm
//   aggregate.cpp  DIR/sweep.json, sweep.csv, plots/*.svg (report library)
//   farm_mpi.cpp   the MPI task farm (compiled only when MPI is found)
#ifndef ATTNMECH_TOOLS_SWEEP_HPP
#define ATTNMECH_TOOLS_SWEEP_HPP

#include <attnmech/attnmech.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace am::sweep {

using ojson = nlohmann::ordered_json;

// A bad SPEC or option (exit 2) / anything else that stops the sweep (exit 1).
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct SweepError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- spec.cpp

struct Axis {
  std::string name;          // a run key ("P", "temperature", "seed") or "width" (the run's width scan)
  std::vector<ojson> values; // numbers, strings, booleans or lists (a list value = a comma-separated setting)
  int zip_group = -1;        // >= 0: varies together with the other axes of this group
};

struct Spec {
  std::string task, estimator;
  std::vector<std::pair<std::string, ojson>> fixed;  // settings common to every point (spec "fixed" + --set)
  std::vector<Axis> axes;                            // in the order of the file; zip groups after the axes
  std::vector<std::string> average;                  // axes averaged over in plots (default: seed)
  std::vector<std::string> warm_axes;                // axes along which a warm start is allowed (width, temperature)
  std::vector<std::string> metrics;                  // dotted paths into results.json; empty = every scalar of runs.*
  std::vector<std::pair<std::string, double>> cost;  // cost model: product of value^exponent (empty = default)
  bool warm_start = false;
  ojson source;                                      // the spec as read (+ --set), written to DIR/spec.json
};

// Parses the SPEC text (JSON); `sets` ("key=value" of --set) are added to / replace the fixed settings.
Spec parse_spec(const std::string &text, const std::vector<std::pair<std::string, std::string>> &sets);
Spec read_spec_file(const std::string &path, const std::vector<std::pair<std::string, std::string>> &sets);

struct Point {
  size_t index = 0;                                   // position in grid order (first axis slowest)
  std::string key;                                    // 16 hex digits: FNV-1a 64 of the canonical parameter text
  std::vector<std::pair<std::string, std::string>> settings;  // every run setting as text (sorted by key)
  std::vector<std::pair<std::string, ojson>> axis_values;     // this point's value on each axis
  double cost = 1;
  ojson canonical;                                    // {task, estimator, settings{...}} with sorted keys
};

// The most points a sweep may have (the project's largest has 224): a larger grid is refused before anything is
// expanded (SpecError, exit 2), and a grid within it whose points would not fit the memory budget too
// (am_memory_check's message, SweepError).
constexpr size_t kMaxPoints = 100000;
// The number of points of the grid, counted from the axes (nothing expanded); kMaxPoints + 1 stands for "more".
size_t grid_size(const Spec &spec);
// Every point of the grid in grid order.
std::vector<Point> expand(const Spec &spec);
// The order in which points are handed out: costliest first; equal costs keep the points that differ only
// on warm axes next to each other (in grid order).
std::vector<size_t> schedule(const Spec &spec, const std::vector<Point> &points);
// Text form of a setting value ("10", "0.01", "1,2,3", "all").
std::string value_text(const ojson &v);
uint64_t fnv1a64(const std::string &s);

// ---------------------------------------------------------------- store.cpp

std::string point_dir(const std::string &out, const Point &p);
// What DIR/points/<key> holds. Complete: a directory (not a symlink: the sweep makes none) whose results.json has
// status ok or warning, names this point (its `sweep_point.key`; a document of an older attnmech without it: the
// point.json beside it names the point) and is read whole by the report library's reader (am_report_read: every
// .npy it refers to is a regular file of the dtype and shape it says). `problem` says why a point directory that is
// there is not this point's results ("" when complete, absent, or a run's own failure: status error, ...).
struct PointCheck {
  bool complete = false;
  std::string status;   // results.json's status ("" when there is none to read)
  std::string problem;  // e.g. "…/points/<key>/runs.0.U.0.npy: truncated data: expected 128 bytes, found 64"
};
PointCheck check_point(const std::string &out, const Point &p);
// check_point(...).complete (*status: the document's status).
bool point_complete(const std::string &out, const Point &p, std::string *status = nullptr);
// Before a point is written: anything at its name that the atomic writer would not replace whole (a symlink, a
// file, a directory without results.json) is removed, never followed. Only the sweep writes under points/.
void clear_point_dir(const std::string &out, const Point &p);
// The point's identity in its results document (`sweep_point`: key and key_text), written with it.
void mark_point(am_record *doc, const Point &p);
// point.json beside results.json: the parameters in clear, the axis values, the attnmech version.
void write_point_json(const std::string &out, const Point &p, const std::string &status, const std::string &message);
// A complete point whose point.json went missing (a writer killed between results.json and it, or deleted by
// hand) gets it back; results.json is the record.
void ensure_point_json(const std::string &out, const Point &p, const std::string &status);
void write_spec_json(const std::string &out, const Spec &spec);
// Writes `text` to `path` atomically (temporary name in the same directory, fsync, rename).
void write_file_atomic(const std::string &path, const std::string &text);

// A per-point claim: DIR/claims/<key> created with O_EXCL holding "pid host". A claim whose process is gone
// (same host, no such pid) is stale and taken over. try_claim: false when a live process holds it (*holder says who).
bool try_claim(const std::string &out, const Point &p, std::string *holder);
void release_claim(const std::string &out, const Point &p);
// A complete point's claim left by a process that is gone (killed between writing the point and releasing it), or
// one that is no claim (empty, garbage): removed, as a takeover would (a live claim stays).
void drop_stale_claim(const std::string &out, const Point &p);

// ---------------------------------------------------------------- runner.cpp

enum class Outcome { ok, warning, failed, cancelled, skipped, held };
const char *outcome_name(Outcome o);

struct Result {
  size_t point = 0;     // index into the points
  Outcome outcome = Outcome::ok;
  std::string status;   // the document's status ("ok", "warning", "not_converged", "error", ...)
  std::string message;  // failure message
  double seconds = 0;
  int rank = 0;
  long iterations = -1; // Newton iterations of the point (runs.*.solver.iterations summed), -1 unknown
  int signal = 0;       // cancelled by this stop signal (the MPI farm: a worker rank's, told to rank 0)
};

// One worker: its own library context, the shared registry, warm-start state between its points.
class Worker {
 public:
  Worker(const am_registry *reg, const Spec &spec, const std::vector<Point> &points, const std::string &out,
         bool quiet, bool recompute);
  ~Worker();
  Worker(const Worker &) = delete;
  Worker &operator=(const Worker &) = delete;
  // Runs point i (claim → execute → write → release). Never throws for a failing run.
  Result run(size_t i);
  am_context *context() { return ctx_; }

 private:
  am_context *ctx_ = nullptr;
  const am_registry *reg_;
  const Spec &spec_;
  const std::vector<Point> &points_;
  std::string out_;
  bool quiet_, recompute_;
  am_record *warm_ = nullptr;   // {"U": [...]} of this worker's previous point
  long last_point_ = -1;
  // A long point's progress (the context's progress sink): one stderr line at most every 30 s.
  std::string running_key_;
  std::chrono::steady_clock::time_point started_{}, reported_{};
  friend int worker_progress(void *user, double done, double total, const char *label);
  bool settled(size_t i, Result &r);                                    // no run needed here (r says why)
  am_status execute(size_t i, am_record **doc, std::string &failure);  // validate and run point i
};
int worker_progress(void *user, double done, double total, const char *label);

// Registered contexts that a stop signal cancels (async-signal-safe: a fixed array of atomics).
void register_cancel(am_context *ctx);
void unregister_cancel(am_context *ctx);
void cancel_all();  // from a signal handler
extern std::atomic<int> g_stop;  // set (to the signal number) by the CLI's handler

// Progress: one line per finished point with the overall count and an ETA (stderr).
class Progress {
 public:
  Progress(size_t total, bool quiet) : total_(total), quiet_(quiet) {}
  void done(const Point &p, const Result &r);
  size_t finished() const { return done_; }

 private:
  size_t total_, done_ = 0;
  bool quiet_;
  double busy_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Runs `todo` on `jobs` threads in this process; returns the results in the order they finished.
std::vector<Result> run_local(const am_registry *reg, const Spec &spec, const std::vector<Point> &points,
                              const std::vector<size_t> &todo, const std::string &out, int jobs, bool quiet,
                              bool recompute);

// ---------------------------------------------------------------- farm_mpi.cpp

// True when built with MPI and this process was started by an MPI launcher (mpirun, srun) with > 1 rank;
// initialises MPI then. rank/size of the world.
bool mpi_start(int *argc, char ***argv, int *rank, int *size);
void mpi_stop();
// The ranks of the world that share this process's node (MPI's shared-memory split); 1 without MPI.
int mpi_node_ranks();
// Ends every rank of the job with `code` (an error on one rank would leave the others waiting).
[[noreturn]] void mpi_abort(int code);
// Every rank's exit code, agreed on (a communicator of its own, apart from the computation's): true with the
// largest code in *worst and the lowest rank whose code is not 0 in *first (size if none); false when some rank
// has not come within `seconds` (it is still computing, or waits in a collective call for this rank).
// (`seconds` < 0: no limit: every rank is known to come.)
bool mpi_agree(int code, double seconds, int *worst, int *first);
// The stop agreement of a distributed `run` (tools/cli_ranks.cpp): every rank's state, agreed in rounds on a
// communicator of its own. A round is one collective call: a rank still computing enters one at each progress
// checkpoint of its main thread (at_checkpoint), a rank whose run has ended enters them until every rank's has. In
// lockstep code every rank meets the same checkpoints, so a stop agreed in a round is taken at the same point on
// every rank: none is left waiting in a collective call of the computation.
struct StopState {
  int signal = 0;           // the largest stop signal any rank has received (0: none)
  int failed_rank = -1;     // the lowest rank whose run ended in an error of its own (-1: none)
  bool rank0_failed = false;
  bool all_ended = false;   // every rank's run has ended
};
// One round (waits with 1 ms sleeps, not spinning a core another rank needs). `failed`: this rank's run ended in an
// error of its own. false after `seconds` without every rank (< 0: no limit).
bool mpi_stop_round(bool at_checkpoint, int signal, bool failed, double seconds, StopState *out);
// The task farm: rank 0 hands out `todo` (schedule order) and collects; with `rank0_works` it also runs
// points on a second thread. Every rank returns; rank 0 gets all results.
std::vector<Result> run_mpi(const am_registry *reg, const Spec &spec, const std::vector<Point> &points,
                            const std::vector<size_t> &todo, const std::string &out, bool quiet, bool recompute,
                            bool rank0_works, int rank, int size);

// ---------------------------------------------------------------- aggregate.cpp

struct AggregateStats {
  size_t points = 0, complete = 0, failed = 0, missing = 0, plots = 0;
};
// DIR/sweep.json, DIR/sweep.csv, DIR/plots/*.svg from the points of `spec` found under DIR; `plot_formats`: the
// report library's AM_REPORT_FORMAT_* bits of the plots (0: its default, SVG).
AggregateStats aggregate(am_context *ctx, const Spec &spec, const std::vector<Point> &points, const std::string &out,
                         uint32_t plot_formats = 0);

}  // namespace am::sweep

#endif
