// Readers of the oneshot task on tiny fixtures (tests/data/oneshot, written by make_fixtures.py): IDX raw and
// gzipped, an Omniglot-like PNG tree, Hershey .jhf parsing (also wrapped lines), corrupt files with clear
// errors; the renderer, resizing and the tokenisation of spec §7.1.
#include <doctest/doctest.h>

#include "oneshot_core.h"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace am::oneshot;

namespace {

const std::string D = AM_ONESHOT_DATA;

struct Ctx {
  am_context *c = nullptr;
  Ctx() { am_context_create(&c, nullptr); }
  ~Ctx() { am_context_destroy(&c); }
  std::string err() const { return am_context_last_error(c); }
};

}  // namespace

TEST_CASE("IDX: raw and gzipped files give the same bytes, dims and labels") {
  Ctx ctx;
  std::vector<uint8_t> a, b;
  std::vector<size_t> da, db;
  REQUIRE(read_idx_u8(ctx.c, D + "/idx/train-images-idx3-ubyte", &a, &da) == AM_OK);
  REQUIRE(read_idx_u8(ctx.c, D + "/idx/t10k-images-idx3-ubyte.gz", &b, &db) == AM_OK);
  CHECK(da == std::vector<size_t>{3, 4, 5});
  CHECK(db == da);
  CHECK(a == b);
  for (size_t i = 0; i < a.size(); ++i) CHECK(int(a[i]) == int((i * 17 + 3) % 256));   // the fixture's formula
  std::string im, lb;
  REQUIRE(find_idx_files(ctx.c, D + "/idx", "t10k", &im, &lb) == AM_OK);
  CHECK(im.find(".gz") != std::string::npos);
  ImageSet s;
  REQUIRE(load_idx_pair(ctx.c, D + "/idx/train-images-idx3-ubyte", D + "/idx/train-labels-idx1-ubyte", 8, &s) == AM_OK);
  CHECK(s.size() == 3);
  CHECK(s.side == 8);
  CHECK(s.label == std::vector<int32_t>{2, 0, 1});
  CHECK(s.class_names.size() == 3);
  for (float v : s.pixels) CHECK((v >= 0.f && v <= 1.f));
  // bilinear upscaling keeps the corners' values: pixel (0,0) of image 0 = 3/255
  CHECK(s.pixels[0] == doctest::Approx(3.0 / 255).epsilon(1e-6));
}

// A line "<key> <n> kB" of /proc/self/status, in KiB.
long status_kib(const char *key) {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  REQUIRE(f != nullptr);
  char line[256];
  long v = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, std::strlen(key)) == 0) v = std::strtol(line + std::strlen(key), nullptr, 10);
  std::fclose(f);
  REQUIRE(v >= 0);
  return v;
}

// Resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0: "5" into clear_refs); returns the RSS.
long reset_peak_rss_kib() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  REQUIRE(f != nullptr);
  std::fputs("5", f);
  std::fclose(f);
  return status_kib("VmRSS:");
}

// Writes an IDX u8 header with `dims` and `payload` data bytes, raw or gzipped.
std::string write_idx_claim(const std::string &name, const std::vector<uint32_t> &dims, size_t payload, bool gz) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t v : dims)
    for (int k = 3; k >= 0; --k) bytes += static_cast<char>((v >> (8 * k)) & 0xff);
  bytes += std::string(payload, '\x07');
  const std::string path = "/tmp/am_idx_" + std::to_string(getpid()) + "_" + name;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    FILE *f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  return path;
}

TEST_CASE("IDX: size claims are never trusted (overflow, short files), and cost no memory") {
  Ctx ctx;
  std::vector<uint8_t> a;
  std::vector<size_t> d;
  // dims [16, 2^30, 2^30]: the product 2^64 wraps to 0 in size_t; refused, not accepted as empty
  std::string p = write_idx_claim("wrap", {16, 1u << 30, 1u << 30}, 0, false);
  CHECK(read_idx_u8(ctx.c, p, &a, &d) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("implausibly large") != std::string::npos);
  std::remove(p.c_str());
  // A 16-byte file (header of a 1-d tensor + 8 bytes) claiming 2^34 bytes; raw and gzipped. Peak RSS is
  // measured in a child so the parent's own memory does not count: before the fix the reader zero-filled
  // the claim (1.5 GB RSS for this file); now storage grows with the bytes read (one 16 MiB step).
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    p = write_idx_claim(gz ? "claim.gz" : "claim", {1u << 17, 1u << 17}, 4, gz);
    const long before = reset_peak_rss_kib();
    CHECK(read_idx_u8(ctx.c, p, &a, &d) == AM_ERR_FORMAT);
    CHECK(ctx.err().find("truncated IDX data (4 of 17179869184 bytes") != std::string::npos);
    const long peak = status_kib("VmHWM:");
    MESSAGE("peak RSS during the read: " << peak << " KiB (" << before << " KiB before)");
    CHECK(peak - before < 50 * 1024);  // under 50 MB above the baseline (one 16 MiB step)
    std::remove(p.c_str());
  }
}

TEST_CASE("IDX: corrupt files fail with a message naming the problem") {
  Ctx ctx;
  std::vector<uint8_t> a;
  std::vector<size_t> d;
  CHECK(read_idx_u8(ctx.c, D + "/bad/truncated-images-idx3-ubyte", &a, &d) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("truncated") != std::string::npos);
  CHECK(read_idx_u8(ctx.c, D + "/bad/badmagic-images-idx3-ubyte", &a, &d) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("magic") != std::string::npos);
  CHECK(read_idx_u8(ctx.c, D + "/bad/float-images-idx3-ubyte", &a, &d) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("element type") != std::string::npos);
  CHECK(read_idx_u8(ctx.c, D + "/bad/truncated.gz", &a, &d) == AM_ERR_FORMAT);
  CHECK(read_idx_u8(ctx.c, D + "/bad/missing-file", &a, &d) == AM_ERR_IO);
  CHECK(ctx.err().find("missing-file") != std::string::npos);
  std::string im, lb;
  CHECK(find_idx_files(ctx.c, D + "/bad", "train", &im, &lb) == AM_ERR_NOT_FOUND);
  // images/labels count mismatch
  ImageSet s;
  CHECK(load_idx_pair(ctx.c, D + "/idx/train-images-idx3-ubyte", D + "/idx/train-images-idx3-ubyte", 4, &s) ==
        AM_ERR_SHAPE);
}

TEST_CASE("PNG tree: alphabets, characters and drawings as Omniglot lays them out") {
  Ctx ctx;
  std::vector<float> g;
  size_t w = 0, h = 0;
  REQUIRE(read_png_grey(ctx.c, D + "/png/alpha/c1/00.png", &g, &w, &h) == AM_OK);
  CHECK(w == 2);
  CHECK(h == 2);
  CHECK(g[0] == doctest::Approx(40.0 / 255).epsilon(1e-6));
  CHECK(g[1] == doctest::Approx(1.0).epsilon(1e-6));
  ImageSet s;
  REQUIRE(load_png_tree(ctx.c, D + "/png", 2, &s) == AM_OK);
  CHECK(s.group_names == std::vector<std::string>{"alpha", "beta"});
  CHECK(s.class_names == std::vector<std::string>{"alpha/c1", "alpha/c2", "beta/c1"});
  CHECK(s.class_group == std::vector<int32_t>{0, 0, 1});
  CHECK(s.size() == 6);
  CHECK(s.label == std::vector<int32_t>{0, 0, 1, 1, 2, 2});
  // drawing 01 of beta/c1: 40·2 + 10 = 90
  CHECK(s.image(5)[0] == doctest::Approx(90.0 / 255).epsilon(1e-6));
  CHECK(read_png_grey(ctx.c, D + "/badpng/a/c/00.png", &g, &w, &h) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("00.png") != std::string::npos);
  CHECK(load_png_tree(ctx.c, D + "/badpng", 2, &s) == AM_ERR_FORMAT);
  CHECK(load_png_tree(ctx.c, D + "/idx", 2, &s) == AM_ERR_NOT_FOUND);
}

// A PNG (8-bit grey) claiming w x h pixels, with valid CRCs, whose IDAT holds one short row.
std::string png_header_only(uint32_t w, uint32_t h) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  auto chunk = [&](const std::string &type, const std::string &data) {
    const std::string body = type + data;
    const uLong crc = crc32(0L, reinterpret_cast<const Bytef *>(body.data()), static_cast<uInt>(body.size()));
    return be32(static_cast<uint32_t>(data.size())) + body + be32(static_cast<uint32_t>(crc));
  };
  // libpng reads up to the first IDAT before it reports the size: one IDAT with a tiny deflate stream, IEND.
  Bytef z[32];
  uLongf zn = sizeof z;
  const Bytef row[2] = {0, 0};
  REQUIRE(compress(z, &zn, row, sizeof row) == Z_OK);
  return std::string("\x89PNG\r\n\x1a\n", 8) +
         chunk("IHDR", be32(w) + be32(h) + std::string("\x08\x00\x00\x00\x00", 5)) +
         chunk("IDAT", std::string(reinterpret_cast<const char *>(z), zn)) + chunk("IEND", "");
}

TEST_CASE("PNG: size claims are checked before the pixels are allocated (found by the png fuzz harness)") {
  Ctx ctx;
  std::vector<float> grey;
  size_t w = 0, h = 0;
  const std::string p = "/tmp/am_png_" + std::to_string(getpid()) + ".png";
  // 10^6 x 10^6 pixels claimed by a ~70-byte file: refused as too large (it allocated 3.5 GB before the fix)
  std::ofstream(p, std::ios::binary) << png_header_only(1000000, 1000000);
  CHECK(read_png_grey(ctx.c, p, &grey, &w, &h) == AM_ERR_FORMAT);
  CHECK_MESSAGE(ctx.err().find("PNG of 1000000x1000000 pixels is too large") != std::string::npos, ctx.err());
  // 4000 x 4000 (under 2^28) from ~70 bytes: more than deflate can hold (8 * 1032 pixels per byte): corrupt
  const std::string small = png_header_only(4000, 4000);
  std::ofstream(p, std::ios::binary) << small;
  CHECK(read_png_grey(ctx.c, p, &grey, &w, &h) == AM_ERR_FORMAT);
  CHECK_MESSAGE(ctx.err().find("corrupt PNG (4000x4000 pixels claimed by a " + std::to_string(small.size()) +
                               "-byte file)") != std::string::npos, ctx.err());
  std::remove(p.c_str());
}

TEST_CASE("Hershey: glyph parsing, wrapped lines, corrupt files") {
  Ctx ctx;
  std::vector<HersheyGlyph> g, gw;
  REQUIRE(read_hershey_file(ctx.c, D + "/hershey/three.jhf", &g) == AM_OK);
  REQUIRE(g.size() == 3);
  // 'A' of futural: "9I[RFJ[ RRFZ[ RMTWT" (coordinate = char − 'R'): margins -9/+9, three strokes
  CHECK(g[0].left == -9);
  CHECK(g[0].right == 9);
  REQUIRE(g[0].strokes.size() == 3);
  CHECK(g[0].strokes[0] == std::vector<std::pair<int, int>>{{0, -12}, {-8, 9}});
  CHECK(g[0].strokes[1] == std::vector<std::pair<int, int>>{{0, -12}, {8, 9}});
  CHECK(g[0].strokes[2] == std::vector<std::pair<int, int>>{{-5, 2}, {5, 2}});
  CHECK(g[2].strokes.empty());   // the space glyph
  double bw = 0, bh = 0;
  const double len = glyph_ink(g[0], &bw, &bh);
  CHECK(bw == 16);
  CHECK(bh == 21);
  CHECK(len == doctest::Approx(2 * std::sqrt(64.0 + 441.0) + 10).epsilon(1e-12));
  REQUIRE(read_hershey_file(ctx.c, D + "/hershey/wrapped.jhf", &gw) == AM_OK);
  REQUIRE(gw.size() == 3);
  CHECK(gw[0].strokes == g[0].strokes);
  CHECK(gw[1].strokes == g[1].strokes);
  CHECK(read_hershey_file(ctx.c, D + "/hershey/short.jhf", &g) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("vertices") != std::string::npos);
  CHECK(read_hershey_file(ctx.c, D + "/hershey/badheader.jhf", &g) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("header") != std::string::npos);
  CHECK(read_hershey_file(ctx.c, D + "/hershey/extra.jhf", &g) == AM_ERR_FORMAT);
  CHECK(read_hershey_file(ctx.c, D + "/hershey/none.jhf", &g) == AM_ERR_IO);
}

TEST_CASE("Hershey rendering: ink where the strokes are, background elsewhere, drawers differ") {
  Ctx ctx;
  std::vector<HersheyGlyph> g;
  REQUIRE(read_hershey_file(ctx.c, D + "/hershey/three.jhf", &g) == AM_OK);
  DrawerSettings ds;
  std::vector<float> img(32 * 32), img2(32 * 32);
  render_glyph(g[0], 32, ds, nullptr, true, img.data());
  // plain 'A': scale 1 px/unit, bbox centre (0, -1.5) at pixel (16, 16); the crossbar y = 2 lies on row 19.5
  // and spans x ∈ [11, 21]; the apex (0, -12) is at (16, 5.5)
  CHECK(img[19 * 32 + 16] < 0.2f);
  CHECK(img[5 * 32 + 16] < 0.5f);
  CHECK(img[12 * 32 + 16] == 1.0f);   // inside the A, above the crossbar
  CHECK(img[0] == 1.0f);
  CHECK(img[31 * 32 + 0] == 1.0f);
  double ink = 0;
  for (float v : img) ink += 1 - v;
  // total stroke length ≈ 54.9 px × width 1.85 px (minus overlaps at the joints)
  CHECK(ink == doctest::Approx(54.9 * 1.85).epsilon(0.2));
  am_rng r;
  am_rng_init(&r, 3, 0);
  render_glyph(g[0], 32, ds, &r, false, img2.data());
  double diff = 0;
  for (size_t k = 0; k < img.size(); ++k) diff += std::fabs(img[k] - img2[k]);
  CHECK(diff > 5);
}

TEST_CASE("resizing: bilinear keeps constants, area averaging halves a checkerboard to its mean") {
  std::vector<float> c(6 * 4, 0.7f), o(8 * 8);
  resize_bilinear(c.data(), 6, 4, o.data(), 8, 8);
  for (float v : o) CHECK(v == doctest::Approx(0.7).epsilon(1e-6));
  std::vector<float> cb(4 * 4), h(2 * 2);
  for (size_t i = 0; i < 16; ++i) cb[i] = float(((i / 4) + (i % 4)) % 2);
  resize_area(cb.data(), 4, 4, h.data(), 2, 2);
  for (float v : h) CHECK(v == doctest::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("tokens (spec 7.1): 48 tokens of 192, LayerNorm'ed patches, standardised positions, episode layout") {
  TokenSpec t;
  CHECK(t.N0() == 192);
  CHECK(t.S() == 48);
  am_rng r;
  am_rng_init(&r, 4, 0);
  Embeddings e;
  make_embeddings(t, &r, &e);
  double m = 0, q = 0;
  for (double v : e.pos) m += v;
  m /= double(e.pos.size());
  for (double v : e.pos) q += (v - m) * (v - m);
  CHECK(std::fabs(m) < 1e-12);
  CHECK(q / double(e.pos.size()) == doctest::Approx(1.0).epsilon(1e-12));
  // an image set of 4 classes × 3 drawings with random pixels
  ImageSet s;
  s.side = 32;
  for (int c = 0; c < 4; ++c) {
    s.class_names.push_back(std::to_string(c));
    s.class_group.push_back(0);
    for (int k = 0; k < 3; ++k) {
      for (int p = 0; p < 32 * 32; ++p) s.pixels.push_back(float(am_rng_uniform(&r)));
      s.label.push_back(c);
    }
  }
  std::vector<double> tok(16 * 192);
  image_tokens(t, s.image(0), pixel_stats(s), tok.data());
  for (size_t p = 0; p < 16; ++p) {
    double mm = 0, qq = 0;
    for (size_t i = 0; i < 192; ++i) mm += tok[p * 192 + i];
    mm /= 192;
    for (size_t i = 0; i < 192; ++i) qq += (tok[p * 192 + i] - mm) * (tok[p * 192 + i] - mm);
    CHECK(std::fabs(mm) < 1e-12);
    CHECK(qq / 192 == doctest::Approx(1.0).epsilon(1e-3));   // eps 1e-5 of LayerNorm vs variance ~ 1
    CHECK(tok[p * 192 + 0] == tok[p * 192 + 1]);            // grey replicated to 3 channels
  }
  std::vector<int32_t> cls{0, 1, 2, 3};
  const auto eps = sample_episodes(s, cls, 10, &r, true);
  REQUIRE(eps.size() == 10);
  int pos = 0;
  for (const auto &ep : eps) {
    CHECK(s.label[ep.img[0]] != s.label[ep.img[1]]);
    CHECK(ep.lab[0] + ep.lab[1] == 1);
    const int qlab = ep.y > 0 ? 1 : 0;
    const size_t sup = ep.lab[0] == qlab ? ep.img[0] : ep.img[1];
    CHECK(s.label[ep.img[2]] == s.label[sup]);   // the query is of the class labelled with the target
    CHECK(ep.img[2] != sup);                     // and another drawing
    pos += ep.y > 0;
  }
  CHECK(pos == 5);
  std::vector<double> X, y;
  episodes_to_X(t, e, s, pixel_stats(s), eps, &X, &y);
  REQUIRE(X.size() == 10 * 48 * 192);
  // query token 40 of episode 0 = its patch tokens + pos[40] + label[2]
  image_tokens(t, s.image(eps[0].img[2]), pixel_stats(s), tok.data());
  for (size_t i = 0; i < 192; i += 17)
    CHECK(X[40 * 192 + i] == doctest::Approx(tok[8 * 192 + i] + e.pos[40 * 192 + i] + e.label[2 * 192 + i]).epsilon(1e-14));
}
