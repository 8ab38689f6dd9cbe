/* attnmech — umbrella header: the whole public C API. */
#ifndef ATTNMECH_H
#define ATTNMECH_H
#include "version.h"
#include "status.h"
#include "context.h"
#include "rng.h"
#include "array.h"
#include "record.h"
#include "paths.h"
#include "dataset.h"
#include "problem.h"
#include "solver.h"
#include "theory.h"
#include "plugin.h"
#include "registry.h"
#include "run.h"
#endif
