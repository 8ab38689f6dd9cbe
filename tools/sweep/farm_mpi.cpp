// attnmech sweep — the MPI task farm (compiled only when Meson finds MPI; farm_nompi.cpp otherwise).
// Rank 0 holds the queue (schedule order: costliest first) and hands out one point index at a time to the
// rank that asks; with rank0_works a second thread of rank 0 takes points from the same queue (only the main
// thread calls MPI: MPI_THREAD_FUNNELED). Every rank writes the points it runs itself (the report library's
// atomic writer) and sends back a one-line result; rank 0 prints the progress lines and gathers the results.
#include "sweep.hpp"

#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings warn under -Wextra)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

namespace sweep {

namespace {

constexpr int kTagResult = 1;  // worker → 0: a result line ("-1 ..." = ready for the first point)
constexpr int kTagTask = 2;    // 0 → worker: int64 point index, -1 = stop

bool g_mpi_on = false;

std::string encode(const Result &r, long index) {
  std::ostringstream s;
  s << index << '\t' << static_cast<int>(r.outcome) << '\t' << r.seconds << '\t' << r.iterations << '\t' << r.status
    << '\t' << r.message;
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
  for (;;) {
    long long index = -1;
    MPI_Recv(&index, 1, MPI_LONG_LONG, 0, kTagTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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
    send_text(encode(r, index), 0, kTagResult);
  }
}

}  // namespace

bool mpi_built() { return true; }

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
  if (*size > 1) return true;
  mpi_stop();
  return false;
}

void mpi_stop() {
  if (!g_mpi_on) return;
  g_mpi_on = false;
  MPI_Finalize();
}

std::vector<Result> run_mpi(const am_registry *reg, const Spec &spec, const std::vector<Point> &points,
                            const std::vector<size_t> &todo, const std::string &out, bool quiet, bool recompute,
                            bool rank0_works, int rank, int size) {
  if (rank != 0) {
    serve(reg, spec, points, out, quiet, recompute, rank);
    return {};
  }
  std::deque<size_t> queue(todo.begin(), todo.end());
  std::mutex m;
  std::vector<Result> local_done, results;
  std::string local_error;
  std::atomic<bool> local_running{rank0_works && !todo.empty()};
  std::atomic<bool> stop{false};
  std::thread local;
  if (local_running) {
    local = std::thread([&]() {
      try {
        Worker w(reg, spec, points, out, quiet, recompute);
        for (;;) {
          size_t i;
          {
            std::lock_guard<std::mutex> lock(m);
            if (queue.empty() || stop) break;
            i = queue.front();
            queue.pop_front();
          }
          Result r = w.run(i);
          std::lock_guard<std::mutex> lock(m);
          local_done.push_back(r);
        }
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lock(m);
        local_error = e.what();
      }
      local_running = false;
    });
  }
  Progress progress(todo.size(), quiet);
  int active = size - 1;
  std::vector<char> buf;
  while (active > 0 || local_running || !local_done.empty()) {
    bool busy = false;
    int flag = 0;
    MPI_Status status;
    if (active > 0) MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &status);
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
        if (r.outcome == Outcome::cancelled) stop = true;
        progress.done(points[r.point], r);
        results.push_back(r);
      }
      long next = -1;
      {
        std::lock_guard<std::mutex> lock(m);
        if (g_stop.load()) stop = true;
        if (!stop && !queue.empty()) {
          next = static_cast<long>(queue.front());
          queue.pop_front();
        }
      }
      send_task(next, status.MPI_SOURCE);
      if (next < 0) --active;
    }
    std::vector<Result> mine;
    {
      std::lock_guard<std::mutex> lock(m);
      mine.swap(local_done);
    }
    for (auto &r : mine) {
      busy = true;
      if (r.outcome == Outcome::cancelled) stop = true;
      progress.done(points[r.point], r);
      results.push_back(r);
    }
    if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (local.joinable()) local.join();
  if (!local_error.empty()) throw SweepError(local_error);
  return results;
}

}  // namespace sweep
