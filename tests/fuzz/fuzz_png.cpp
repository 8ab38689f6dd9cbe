// Fuzz harness "png": the fuzzer's bytes are one PNG file, read by am::oneshot::read_png_grey
// (plugins/task-oneshot/images.cpp, over libpng's simplified API) as the Omniglot-tree loader reads each
// drawing. An image that reads must have w·h grey values in [0, 1].
#include "fuzz_util.hpp"

#include "oneshot_core.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  std::vector<float> grey;
  size_t w = 0, h = 0;
  const am_status st = am::oneshot::read_png_grey(fuzz::context(), file.set(data, size), &grey, &w, &h);
  fuzz::expect_message(st);
  if (st == AM_OK) {
    if (grey.size() != w * h) std::abort();
    for (float g : grey)
      if (!(g >= 0.f && g <= 1.f)) std::abort();
  }
  return 0;
}
