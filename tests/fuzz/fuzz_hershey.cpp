// Fuzz harness "hershey": the fuzzer's bytes are one Hershey font (.jhf), read by am::oneshot::read_hershey_file
// and am::oneshot::parse_hershey (plugins/task-oneshot/images.cpp). The glyphs of a font that reads are then used
// as the renderer uses them: glyph_ink (length, bounding box) and render_glyph (plain and with a random
// drawer) on a 16×16 canvas whose pixels must stay in [0, 1].
#include "fuzz_util.hpp"

#include "oneshot_core.h"

#include <cmath>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  std::vector<am::oneshot::HersheyGlyph> glyphs;
  const am_status st = am::oneshot::read_hershey_file(fuzz::context(), file.set(data, size), &glyphs);
  fuzz::expect_message(st);
  if (st != AM_OK) return 0;
  if (glyphs.empty()) std::abort();
  constexpr size_t side = 16;
  std::vector<float> px(side * side);
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  const am::oneshot::DrawerSettings drawer;
  for (size_t i = 0; i < glyphs.size() && i < 8; ++i) {
    double bw = -1, bh = -1;
    const double ink = am::oneshot::glyph_ink(glyphs[i], &bw, &bh);
    if (!(ink >= 0) || !(bw >= 0) || !(bh >= 0)) std::abort();
    for (bool plain : {true, false}) {
      am::oneshot::render_glyph(glyphs[i], side, drawer, &rng, plain, px.data());
      for (float p : px)
        if (!(p >= 0.f && p <= 1.f)) std::abort();
    }
  }
  return 0;
}
