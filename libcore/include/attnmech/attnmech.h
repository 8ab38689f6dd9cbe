/* attnmech — umbrella header: the whole public C API. The base library's (base.h: what plugins link) and the host
 * library's: the plugin registry (registry.h) and the run API (run.h). */
#ifndef ATTNMECH_H
#define ATTNMECH_H
#include "base.h"
#include "registry.h"
#include "run.h"
#endif
