// attnmech — task "potts": the plugin's parameters → potts::TaskOptions of the shared sequence
// generator (plugins/common/potts/potts_data.h, which does the work).
#ifndef ATTNMECH_POTTS_TASK_H
#define ATTNMECH_POTTS_TASK_H

#include <attnmech/record.h>

#include "potts_data.h"

namespace potts {

// `host_threads` ≤ 0 means all cores.
am_status task_options_from_params(am_context *ctx, const am_record *params, int host_threads, TaskOptions *o);

}  // namespace potts
#endif
