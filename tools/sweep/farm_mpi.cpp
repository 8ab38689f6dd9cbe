// attnmech sweep — the MPI task farm (compiled only when Meson finds MPI; farm_nompi.cpp otherwise).
// Rank 0 holds the queue (schedule order: costliest first) and hands out one point index at a time to the
// rank that asks; with rank0_works a second thread of rank 0 takes points from the same queue (only the main
// thread calls MPI: MPI_THREAD_FUNNELED). Every rank writes the points it runs itself (the report library's
// atomic writer) and sends back a one-line result; rank 0 prints the progress lines and gathers the results.
#include "sweep.hpp"

#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings warn under -Wextra)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

namespace am::sweep {

namespace {

constexpr int kTagResult = 1;  // worker → 0: a result line ("-1 ..." = ready for the first point)
constexpr int kTagTask = 2;    // 0 → worker: int64 point index, -1 = stop

bool g_mpi_on = false;
// mpi_agree's communicator, made at the start (a collective call) while every rank is there: apart from
// MPI_COMM_WORLD, in whose collective calls a rank may wait for the one that failed.
MPI_Comm g_agree_comm = MPI_COMM_NULL;
// mpi_stop_round's: the rounds of a distributed run's stop agreement, apart from the exit-code agreement.
MPI_Comm g_stop_comm = MPI_COMM_NULL;

std::string encode(const Result &r, long index) {
  std::ostringstream s;
  s << index << '\t' << static_cast<int>(r.outcome) << '\t' << r.seconds << '\t' << r.iterations << '\t' << r.signal
    << '\t' << r.status << '\t' << r.message;
  return s.str();
}

Result decode(const std::string &text, long *index) {
  Result r;
  std::istringstream s(text);
  int outcome = 0;
  std::string field;
  std::getline(s, field, '\t');
  *index = std::strtol(field.c_str(), nullptr, 10);
  std::getline(s, field, '\t');
  outcome = std::atoi(field.c_str());
  std::getline(s, field, '\t');
  r.seconds = std::strtod(field.c_str(), nullptr);
  std::getline(s, field, '\t');
  r.iterations = std::strtol(field.c_str(), nullptr, 10);
  std::getline(s, field, '\t');
  r.signal = std::atoi(field.c_str());
  std::getline(s, r.status, '\t');
  std::getline(s, r.message);
  r.outcome = static_cast<Outcome>(outcome);
  if (*index >= 0) r.point = static_cast<size_t>(*index);
  return r;
}

void send_text(const std::string &t, int to, int tag) {
  MPI_Send(t.data(), static_cast<int>(t.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

void send_task(long index, int to) {
  long long v = index;
  MPI_Send(&v, 1, MPI_LONG_LONG, to, kTagTask, MPI_COMM_WORLD);
}

// A worker rank: ask, run, report, until told to stop.
void serve(const am_registry *reg, const Spec &spec, const std::vector<Point> &points, const std::string &out,
           bool quiet, bool recompute, int rank) {
  Worker w(reg, spec, points, out, quiet, recompute);
  Result hello;
  send_text(encode(hello, -1), 0, kTagResult);
  double waited = 0, worked = 0;
  size_t n = 0;
  for (;;) {
    long long index = -1;
    const auto w0 = std::chrono::steady_clock::now();
    MPI_Recv(&index, 1, MPI_LONG_LONG, 0, kTagTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    if (index < 0 && n > 0 && std::getenv("AM_SWEEP_TIMING"))  // bench/sweep: the dispatch latency a worker sees
      std::fprintf(stderr, "rank %d: %zu points, waited %.3f ms per point for the next one, %.3f ms per point in runs\n",
                   rank, n, 1e3 * waited / double(n), 1e3 * worked / double(n));
    if (index >= 0) ++n;
    if (index < 0 || static_cast<size_t>(index) >= points.size()) break;
    Result r;
    try {
      r = w.run(static_cast<size_t>(index));
    } catch (const std::exception &e) {
      r.point = static_cast<size_t>(index);
      r.outcome = Outcome::failed;
      r.status = "error";
      r.message = e.what();
    }
    r.rank = rank;
    if (r.outcome == Outcome::cancelled) r.signal = std::max(0, g_stop.load());  // rank 0 stops the farm, says why
    worked += r.seconds;
    send_text(encode(r, index), 0, kTagResult);
  }
}

}  // namespace

bool mpi_start(int *argc, char ***argv, int *rank, int *size) {
  // Only under a launcher: a plain `attnmech sweep` never initialises MPI (no singleton start-up).
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  bool launched = false;
  for (const char *v : vars) launched = launched || std::getenv(v);
  if (!launched) return false;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return false;
  g_mpi_on = true;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_agree_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_stop_comm);
  if (*size > 1) return true;
  mpi_stop();
  return false;
}

void mpi_abort(int code) {
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);  // not reached
}

namespace {

// MPI_MAX over `n` ints of every rank on `comm`, polled (1 ms sleeps) for at most `seconds` (< 0: no limit).
bool max_over_ranks(MPI_Comm comm, const int *mine, int *all, int n, double seconds) {
  MPI_Request req;
  MPI_Iallreduce(mine, all, n, MPI_INT, MPI_MAX, comm, &req);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (seconds >= 0 && std::chrono::steady_clock::now() > end) return false;  // the request stays: MPI_Abort follows
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

bool mpi_agree(int code, double seconds, int *worst, int *first) {
  int rank = 0, size = 1;
  MPI_Comm_rank(g_agree_comm, &rank);
  MPI_Comm_size(g_agree_comm, &size);
  int mine[2] = {code, code ? size - rank : 0}, all[2] = {0, 0};
  if (!max_over_ranks(g_agree_comm, mine, all, 2, seconds)) return false;
  *worst = all[0];
  *first = size - all[1];
  return true;
}

bool mpi_stop_round(bool at_checkpoint, int signal, bool failed, double seconds, StopState *out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(g_stop_comm, &rank);
  MPI_Comm_size(g_stop_comm, &size);
  // MAX of: the signal; size - rank of a failed rank (the lowest wins); rank 0 failed; a rank still computing.
  const int mine[4] = {signal, failed ? size - rank : 0, failed && rank == 0, at_checkpoint ? 1 : 0};
  int all[4] = {0, 0, 0, 0};
  if (!max_over_ranks(g_stop_comm, mine, all, 4, seconds)) return false;
  out->signal = all[0];
  out->failed_rank = all[1] > 0 ? size - all[1] : -1;
  out->rank0_failed = all[2] != 0;
  out->all_ended = all[3] == 0;
  return true;
}

int mpi_node_ranks() {
  if (!g_mpi_on) return 1;
  MPI_Comm node;
  int n = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

void mpi_stop() {
  if (!g_mpi_on) return;
  g_mpi_on = false;
  MPI_Finalize();
}

namespace {

// Rank 0: the queue, the per-rank bookkeeping (tasks in flight, stop sent) and the optional local worker thread.
// Every worker rank holds up to kAhead points (one running, the next already in its MPI buffer), so it never
// waits for the dispatcher between two points.
constexpr int kAhead = 2;

class Dispatcher {
 public:
  Dispatcher(const std::vector<Point> &points, const std::vector<size_t> &todo, bool quiet, int size)
      : points_(points), queue_(todo.begin(), todo.end()), progress_(todo.size(), quiet), inflight_(size, 0),
        stopped_(size, 0), done_(size, 0), active_(size - 1) {}

  // The local worker thread of rank 0 (takes points from the same queue).
  void start_local(const am_registry *reg, const Spec &spec, const std::string &out, bool quiet, bool recompute) {
    if (queue_.empty()) return;
    local_running_ = true;
    local_ = std::thread([=, &spec]() {
      try {
        Worker w(reg, spec, points_, out, quiet, recompute);
        for (long i; (i = take()) >= 0;) {
          Result r = w.run(static_cast<size_t>(i));
          std::lock_guard<std::mutex> lock(m_);
          local_done_.push_back(r);
        }
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lock(m_);
        local_error_ = e.what();
      }
      local_running_ = false;
    });
  }

  std::vector<Result> loop() {
    std::vector<char> buf;
    for (;;) {
      const bool local_left = local_running_.load();  // read before local_done_: a last result is not missed
      {
        std::lock_guard<std::mutex> lock(m_);
        if (active_ == 0 && !local_left && local_done_.empty()) break;
      }
      bool busy = false;
      int flag = 0;
      MPI_Status status;
      if (active_ > 0) MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        busy = true;
        int n = 0;
        MPI_Get_count(&status, MPI_CHAR, &n);
        buf.resize(static_cast<size_t>(n) + 1);
        MPI_Recv(buf.data(), n, MPI_CHAR, status.MPI_SOURCE, kTagResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        long index = -1;
        Result r = decode(std::string(buf.data(), static_cast<size_t>(n)), &index);
        r.rank = status.MPI_SOURCE;
        if (index >= 0) {
          --inflight_[static_cast<size_t>(r.rank)];
          finished(r);
        }
        feed(r.rank, index < 0 ? kAhead : 1);
      }
      std::vector<Result> mine;
      {
        std::lock_guard<std::mutex> lock(m_);
        mine.swap(local_done_);
      }
      for (auto &r : mine) {
        busy = true;
        finished(r);
      }
      // Idle: a worker holds its next point already (kAhead), so a millisecond here costs no worker time and keeps
      // this rank's own worker thread from sharing its core with a polling loop.
      if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (local_.joinable()) local_.join();
    if (!local_error_.empty()) throw SweepError(local_error_);
    return std::move(results_);
  }

 private:
  long take() {
    std::lock_guard<std::mutex> lock(m_);
    if (g_stop.load()) stop_ = true;
    if (stop_ || queue_.empty()) return -1;
    const size_t i = queue_.front();
    queue_.pop_front();
    return static_cast<long>(i);
  }

  // Up to `n` more points for rank w; when the queue is out (or the sweep stops), the stop, once: it reaches w
  // after the points in flight (messages between two ranks keep their order). w is done when it is stopped and
  // every point it was given has come back.
  void feed(int w, int n) {
    const size_t k = static_cast<size_t>(w);
    if (!stopped_[k]) {
      for (int j = 0; j < n; ++j) {
        const long i = take();
        if (i < 0) {
          send_task(-1, w);
          stopped_[k] = 1;
          break;
        }
        send_task(i, w);
        ++inflight_[k];
      }
    }
    if (stopped_[k] && inflight_[k] == 0 && !done_[k]) {
      done_[k] = 1;
      --active_;
    }
  }

  void finished(const Result &r) {
    if (r.outcome == Outcome::cancelled) {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    if (r.signal > 0) {  // a signal to one worker rank stops the whole sweep, as one to mpirun does
      int none = 0;
      if (g_stop.compare_exchange_strong(none, r.signal)) cancel_all();
    }
    progress_.done(points_[r.point], r);
    results_.push_back(r);
  }

  const std::vector<Point> &points_;
  std::deque<size_t> queue_;
  Progress progress_;
  std::vector<int> inflight_;
  std::vector<char> stopped_, done_;
  int active_;
  bool stop_ = false;
  std::mutex m_;
  std::thread local_;
  std::atomic<bool> local_running_{false};
  std::vector<Result> local_done_, results_;
  std::string local_error_;
};

}  // namespace

std::vector<Result> run_mpi(const am_registry *reg, const Spec &spec, const std::vector<Point> &points,
                            const std::vector<size_t> &todo, const std::string &out, bool quiet, bool recompute,
                            bool rank0_works, int rank, int size) {
  // Every rank runs points of its own: the Worker's context keeps each solve in its process (AM_DISTRIBUTE_OFF).
  if (rank != 0) {
    serve(reg, spec, points, out, quiet, recompute, rank);
    return {};
  }
  const auto t0 = std::chrono::steady_clock::now();
  Dispatcher d(points, todo, quiet, size);
  if (rank0_works) d.start_local(reg, spec, out, quiet, recompute);
  std::vector<Result> results = d.loop();
  // The farm's overhead: worker time not spent inside a point (claim, run, write), per point handed out.
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double busy = 0;
  for (const auto &r : results) busy += r.seconds;
  const int workers = size - 1 + (rank0_works ? 1 : 0);
  if (!results.empty() && !quiet)
    std::fprintf(stderr, "farm: %zu points in %.3f s on %d workers (%d ranks); idle %.3f ms per point (dispatch, messages, tail)\n",
                 results.size(), wall, workers, size, 1e3 * (wall * workers - busy) / static_cast<double>(results.size()));
  return results;
}

}  // namespace am::sweep
