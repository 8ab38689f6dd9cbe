// Fuzz harness "sweep_spec": the fuzzer's bytes are a sweep SPEC file, read as `attnmech sweep SPEC --list` reads
// it (tools/sweep/spec.cpp): read_spec_file (the tools' one reader, libcore/src/read_input.hpp: regular file,
// depth-limited JSON, no NUL), then the grid expanded (keys, cost) and scheduled. A bad spec must come out as
// SpecError (exit 2) or SweepError (exit 1, the memory check) with a message; any other exception, a crash, a
// hang or a blow-up is a finding. AM_MEMORY_LIMIT is set low (512 KB: grids of at most ~850 points) so the grid's
// memory check is exercised and an input stays well within -timeout=1: expanding takes ~0.3 ms a point here (ASan,
// -O1, on a loaded machine: 896 points of a 660-byte spec took 0.3 s, and over 1 s at load 8 on 2 cores), ~20 us in
// a release build.
#include "fuzz_util.hpp"

#include "../../tools/sweep/sweep.hpp"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("AM_MEMORY_LIMIT", "512K", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  try {
    const am::sweep::Spec spec = am::sweep::read_spec_file(file.set(data, size), {});
    const std::vector<am::sweep::Point> pts = am::sweep::expand(spec);
    if (pts.empty() || pts.size() > am::sweep::kMaxPoints || pts.size() != am::sweep::grid_size(spec)) std::abort();
    if (am::sweep::schedule(spec, pts).size() != pts.size()) std::abort();
  } catch (const am::sweep::SpecError &e) {
    if (!*e.what()) std::abort();  // a refusal must say why
  } catch (const am::sweep::SweepError &e) {
    if (!*e.what()) std::abort();
  }
  return 0;
}
