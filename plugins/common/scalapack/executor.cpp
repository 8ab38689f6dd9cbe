// attnmech — the distributed executor (plugins/common/attention/executor.hpp): a run's P-sized work on the
// ScaLAPACK engine over every rank of MPI_COMM_WORLD (docs/scale.md "One solve across machines"). It owns what a
// distributed run does differently: the engine on each handle, the per-rank memory model (rank_bytes) with the
// node's check and the ranks' one verdict, the kernels phase computed block-cyclically, and the rank-0 rules —
// whole kernels (kernels=full) are made by rank 0 alone, as a serial run makes them (through the serial executor
// it wraps), and counted so in rank 0's memory check.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "executor.hpp"

namespace am::scalapack {

namespace {

using am::attention::Executor;
using am::attention::KernelOut;
using am::attention::RunShape;

class Distributed final : public Executor {
 public:
  Distributed(am_context *ctx, std::unique_ptr<Executor> serial)
      : serial_(std::move(serial)), block_(am_context_scalapack_block(ctx)) {}

  std::string share() const override { return ", this rank's share of " + std::to_string(ranks()) + " ranks"; }

  am_status check_memory(am_context *ctx, const RunShape &s, const char *what) override {
    const bool whole = s.whole_kernels && rank() == 0;  // this rank builds whole kernels: the serial count
    const bool kernels = !s.whole_kernels && (s.k > 0 || s.store_kernels);
    const double eng = whole ? 0.0 : rank_bytes(s.P, s.N0, s.H, s.Pt, s.subsets, kernels, s.k, block_);
    double bytes = 0;
    am_status st = am_theory_memory_check_engine(ctx, s.arch, s.P, s.N0, s.Pt, whole ? s.k : 0, whole ? 1 : 0,
                                                 s.extra_doubles, eng, what, &bytes);
    st = check_node(ctx, st, bytes, what);
    return agree(ctx, st);
  }

  am_status attach(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *y,
                   bool main) override {
    if (!main) return distribute(ctx, th, P, N0, H, xi, y);
    if (am_status st = serial_->attach(ctx, th, P, N0, H, xi, y, true)) return st;
    return distribute(ctx, th, P, N0, H, xi, y, &shared_);
  }

  // The path subsets' engines and the kernels need the memory of Γ's factor (and of the handle's workspaces).
  void predictions_done() override {
    serial_->predictions_done();
    if (shared_) drop_factor(*shared_);
  }

  bool makes_kernels(bool whole) const override { return !whole || rank() == 0; }

  am_status kernel(am_context *ctx, const double *U, const std::vector<size_t> &examples, size_t k,
                   KernelOut *out) override {
    if (out->whole) return serial_->kernel(ctx, U, examples, k, out);
    return kernel_summary(ctx, *shared_, U, examples, k, out->block, &out->min, out->overlaps, out->eigenvalues);
  }

  am_status prekernel(am_context *ctx, size_t p, const std::vector<size_t> &examples, KernelOut *out) override {
    if (out->whole) return serial_->prekernel(ctx, p, examples, out);
    return prekernel_summary(ctx, *shared_, p, examples, out->block, &out->min);
  }

 private:
  std::unique_ptr<Executor> serial_;  // rank 0's whole kernels
  std::shared_ptr<Shared> shared_;    // the main handle's engine state
  int block_;
};

}  // namespace

std::unique_ptr<am::attention::Executor> distributed_executor(am_context *ctx,
                                                              std::unique_ptr<am::attention::Executor> serial) {
  return std::make_unique<Distributed>(ctx, std::move(serial));
}

}  // namespace am::scalapack
