/* attnmech — the base library (libattnmech-base): types, status, contexts, random numbers, arrays, records, the
 * attention-path mathematics and the theory solve, .npy and problem-directory input, and what a plugin is handed
 * (plugin.h). Plugins link this library only; the host library (libattnmech: registry.h, run.h) sits above it and
 * attnmech.h includes both. */
#ifndef ATTNMECH_BASE_H
#define ATTNMECH_BASE_H

#include "version.h"
#include "status.h"
#include "context.h"
#include "rng.h"
#include "array.h"
#include "record.h"
#include "paths.h"
#include "kernels.h"
#include "dataset.h"
#include "problem.h"
#include "solver.h"
#include "metrics.h"
#include "theory.h"
#include "plugin.h"

#endif
