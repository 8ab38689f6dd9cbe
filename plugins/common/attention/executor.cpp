// attnmech — the choice of a run's executor (executor.hpp), made from the host's explicit setting, and what both
// executors' memory checks count as already held.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "engine.hpp"  // plugins/common/scalapack: the distributed executor, or its stub without -Dscalapack
#include "executor.hpp"

namespace am {
namespace attention {

std::unique_ptr<Executor> make_executor(am_context *ctx) {
  if (am_context_distribute(ctx) != AM_DISTRIBUTE_OFF && am::scalapack::distributing())
    return am::scalapack::distributed_executor(ctx, serial_executor());
  return serial_executor();
}

double resident_bytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &pages, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGE_SIZE);
  return n == 2 && page > 0 ? double(resident) * double(page) : 0;
}

}  // namespace attention
}  // namespace am
