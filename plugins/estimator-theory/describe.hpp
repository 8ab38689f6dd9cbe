// attnmech — the theory estimator's report spec (docs/abi.md "report spec"): describe.cpp (accuracy, U, kernels,
// alignment, head scores; plugins/common/attention/report.hpp) and describe_scan.cpp (temperature scan grids,
// validation-selected accuracy, pruning).
#ifndef ATTNMECH_THEORY_DESCRIBE_HPP
#define ATTNMECH_THEORY_DESCRIBE_HPP

#include <attnmech/attnmech.h>

namespace am::theory_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}
// The plots of a temperature scan and of pruning (only when the runs carry those keys).
am_status theory_describe_scan(am_context *ctx, const am_record *results, am_record *report);

#endif
