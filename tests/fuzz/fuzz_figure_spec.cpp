// Fuzz harness "figure_spec": the fuzzer's bytes are a figure spec, read as `attnmech figure SPEC --check` reads it
// (tools/figure/spec.cpp): read_figure (the tools' one reader, libcore/src/read_input.hpp), every sweep parsed
// and expanded (tools/sweep/spec.cpp), every plot block and caption number checked, field types included. A bad
// spec must come out as am::figure::SpecError (exit 2) with a message; any other exception (the JSON library's
// type_error was exit 1 with its raw text), a crash, a hang or a blow-up is a finding. AM_MEMORY_LIMIT as in
// fuzz_sweep_spec.cpp (512 KB: grids of at most ~850 points).
#include "fuzz_util.hpp"

#include "../../tools/figure/figure.hpp"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("AM_MEMORY_LIMIT", "512K", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  try {
    const am::figure::Figure f = am::figure::read_figure(file.set(data, size), {});
    if (f.sweeps.empty() || f.panels.empty()) std::abort();
    am::figure::check_plots(f);  // as `figure --plot-only` re-checks after reading each sweep's spec.json
  } catch (const am::figure::SpecError &e) {
    if (!*e.what()) std::abort();
  } catch (const am::sweep::SweepError &e) {  // the memory check of a grid
    if (!*e.what()) std::abort();
  }
  return 0;
}
