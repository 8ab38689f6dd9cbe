// attnmech CLI — `attnmech run` under mpirun/srun with K > 1 ranks in a build with ScaLAPACK (docs/cli.md "Under
// MPI"): one run on every rank, an estimator built for it spreading its solve over them (docs/scale.md); rank 0
// writes and prints.
//
// Stopping. A rank waits in the computation's collective calls for the others, so no rank may leave a phase alone:
// a stop signal (SIGTERM from mpirun, a scheduler or `kill`, to any rank) and a rank's own failure are agreed on in
// rounds (tools/sweep/farm_mpi.cpp, mpi_stop_round) at every progress checkpoint of the run's main thread (the
// Newton steps, the phases after the solve, the task's steps). Every rank meets the same
// checkpoints, so all stop at the same one; a rank whose run has ended keeps answering the rounds until every
// rank's has. Then rank 0 writes the results so far (`status` `cancelled`) and says why, and the ranks agree on the
// exit code: a stop signal's 128 + n, an error's 1 (told once by rank 0 when every rank met it, else by the lowest
// rank that failed, named).
#include "cli.hpp"

#include "sweep/sweep.hpp"  // mpi_start, mpi_stop_round, mpi_agree, mpi_abort, mpi_stop

#include <algorithm>
#include <cstdio>
#include <thread>

namespace am::cli {

namespace {

// How long a rank whose run failed alone waits for the others to reach a checkpoint: past it they are waiting in a
// collective call for this rank, and only MPI_Abort ends them.
constexpr double kFailedWaitSeconds = 10;

class Ranks : public RunRanks {
 public:
  Ranks(int rank, int size) : rank_(rank), size_(size), main_(std::this_thread::get_id()) {}
  int rank() const override { return rank_; }

  void setup(Host *h) const override {
    h->data_part = rank_;
    h->data_parts = size_;
    const int cores = int(std::thread::hardware_concurrency());
    h->threads = std::max(1, cores / std::max(1, am::sweep::mpi_node_ranks()));
  }

  int checkpoint() override {
    if (std::this_thread::get_id() != main_) return stopped_ || stop_signal() != 0;  // MPI on the main thread only
    if (stopped_ || ended_) return 1;  // agreed already: every rank is past this round
    am::sweep::StopState s;
    am::sweep::mpi_stop_round(true, stop_signal(), false, -1, &s);
    take(s);
    return stopped_;
  }

  void ended(bool failed) override {
    if (ended_) return;
    ended_ = true;
    failed_ = failed;
    am::sweep::StopState s;
    do {
      if (!am::sweep::mpi_stop_round(false, stop_signal(), failed, failed ? kFailedWaitSeconds : -1, &s)) {
        timed_out_ = true;
        return;
      }
      take(s);
    } while (!s.all_ended);
    final_ = s;
  }

  std::string stop_reason() const override {
    return final_.failed_rank >= 0 && !failed_ ? "rank " + std::to_string(final_.failed_rank) + " failed" : "";
  }
  bool timed_out() const { return timed_out_; }
  // Whether this rank tells its own error: rank 0 always; another rank when rank 0 did not fail on its own and it
  // is the lowest rank that did (an error every rank met is told once).
  bool tells(bool has_error) const {
    return has_error && (rank_ == 0 || (!final_.rank0_failed && final_.failed_rank == rank_));
  }

 private:
  void take(const am::sweep::StopState &s) {
    if (s.signal) note_stop_signal(s.signal);  // every rank stops as if it had received it (exit 128 + n)
    if (s.signal || s.failed_rank >= 0) stopped_ = true;
  }
  int rank_, size_;
  std::thread::id main_;
  bool stopped_ = false, ended_ = false, failed_ = false, timed_out_ = false;
  am::sweep::StopState final_;
};

// An error of a distributed run, as main prints it (rank > 0: named).
void print_rank_error(int rank, bool usage, const std::string &what) {
  std::fflush(stdout);
  const std::string who = rank > 0 ? "attnmech (rank " + std::to_string(rank) + ")" : "attnmech";
  if (usage) std::fprintf(stderr, "%s: usage error: %s\n(see 'attnmech run --help')\n", who.c_str(), what.c_str());
  else std::fprintf(stderr, "%s: error: %s\n", who.c_str(), what.c_str());
}

}  // namespace

int cmd_run_ranks(Args &a) {
  int rank = 0, size = 1;
  if (!am::sweep::mpi_start(nullptr, nullptr, &rank, &size)) return cmd_run(a, nullptr);
  Ranks ranks(rank, size);
  int code = EXIT_OK;
  bool usage = false;
  std::string what;
  try {
    code = cmd_run(a, &ranks);
  } catch (const UsageError &e) {
    code = EXIT_USAGE, usage = true, what = e.what();
  } catch (const std::exception &e) {
    code = EXIT_RUNTIME, what = e.what();
  }
  ranks.ended(!what.empty());  // a run that threw before it ended (usage, plugins, --out): the others stop
  if (ranks.timed_out()) {
    print_rank_error(rank, usage,
                     what + " (the other ranks did not reach a checkpoint within " +
                         std::to_string(int(kFailedWaitSeconds)) + " s: they wait for this rank; ending them all)");
    am::sweep::mpi_abort(code ? code : EXIT_RUNTIME);
  }
  int worst = code, first = 0;
  am::sweep::mpi_agree(code, -1, &worst, &first);  // every rank's run has ended: rank 0 may still be writing
  if (ranks.tells(!what.empty())) print_rank_error(rank, usage, what);
  am::sweep::mpi_stop();
  return worst;
}

}  // namespace am::cli
