// attnmech — the theory estimator's ABI-2 `describe` (docs/abi2.md "report spec"); see describe.cpp.
#ifndef ATTNMECH_THEORY_DESCRIBE_HPP
#define ATTNMECH_THEORY_DESCRIBE_HPP

#include <attnmech/attnmech.h>

// Appends to report.plots the plot specs of the theory estimator's keys in `results` (a results document).
am_status theory_describe(am_context *ctx, const am_record *results, am_record *report);

#endif
