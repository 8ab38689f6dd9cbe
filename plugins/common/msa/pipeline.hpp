// msa_core — the alignment pipeline in one call, in the order plmc's run_plmc takes it: read → weigh → infer → write.
// The host runs it as two plugins, one half each:
//   the task msa:                   make_dataset (dataset.cpp)  read_alignment → check_dataset_budget →
//                                   cluster_weights (weights.cpp) → split_rows → put_records (the dataset record,
//                                   marked `alignment`)
//   the estimator pseudolikelihood: run_msa_fit (msa_fit.cpp)   check_msa_fit → read_msa_dataset → make_model →
//                                   plan_visits → infer (L-BFGS) → write_fit (scores, contacts, params; the run
//                                   marked `fit` = "alignment"); its report (msa_report.hpp) writes couplings.txt
// The halves live apart so the task's module links no part of the fit. run_msa runs both back to back.
#ifndef ATTNMECH_MSA_PIPELINE_HPP
#define ATTNMECH_MSA_PIPELINE_HPP

#include <attnmech/plugin.hpp>
#include <attnmech/rng.h>

#include "dataset.hpp"
#include "msa_fit.h"

namespace am::msa {

// The file `task.file` to the run record, through `dataset` and `extras` as the host hands them over. The streams
// are the host's: `task_rng` the task's, `fit_rng` the estimator's (am_host_rng); `loop` runs the weights,
// `o.parallel` the fit. An error of the task's half comes back as its status, with its message on `ctx`.
am_status run_msa(am_context *ctx, const Options &task, const potts::PLOptions &o, const FitOptions &f,
                  const am_rng &task_rng, const am_rng &fit_rng, const am::sdk::ParallelFor &loop, am_record *dataset,
                  am_record *extras, am_record *run);

}  // namespace am::msa

#endif
