// msa_core — the alignment pipeline in one call (pipeline.hpp).
#include "pipeline.hpp"

namespace am::msa {

am_status run_msa(am_context *ctx, const Options &task, const potts::PLOptions &o, const FitOptions &f,
                  const am_rng &task_rng, const am_rng &fit_rng, const am::sdk::ParallelFor &loop, am_record *dataset,
                  am_record *extras, am_record *run) {
  try {  // read → encode → weigh → hold out → the dataset record
    if (make_dataset(task, task_rng, loop, dataset, extras).cancelled) return AM_CANCELLED;
  } catch (const am::sdk::Error &e) {
    return am_context_fail(ctx, e.status, "%s", e.what());
  }
  return run_msa_fit(ctx, o, f, dataset, fit_rng, run);  // the record → plan → infer → scores, contacts, params
}

}  // namespace am::msa
