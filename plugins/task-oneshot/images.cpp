// attnmech — task "oneshot": image readers (IDX, PNG trees, Hershey fonts), the glyph renderer, resizing
// and the image-set cache.
#include "oneshot_core.h"

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

namespace am::oneshot {

namespace {

bool is_dir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Sorted entries of a directory (no dot files); dirs_only / files_only filter.
bool list_dir(const std::string &dir, int want_dirs, std::vector<std::string> *out) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) return false;
  while (struct dirent *e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string p = dir + "/" + e->d_name;
    if (want_dirs == 1 && !is_dir(p)) continue;
    if (want_dirs == 0 && !is_file(p)) continue;
    out->push_back(e->d_name);
  }
  ::closedir(d);
  std::sort(out->begin(), out->end());
  return true;
}

}  // namespace

// ------------------------------------------------------------------ resizing

void resize_bilinear(const float *in, size_t iw, size_t ih, float *out, size_t ow, size_t oh) {
  const double sx = double(iw) / double(ow), sy = double(ih) / double(oh);
  for (size_t y = 0; y < oh; ++y) {
    double fy = (double(y) + 0.5) * sy - 0.5;
    fy = std::min(std::max(fy, 0.0), double(ih - 1));
    const size_t y0 = size_t(fy), y1 = std::min(y0 + 1, ih - 1);
    const double wy = fy - double(y0);
    for (size_t x = 0; x < ow; ++x) {
      double fx = (double(x) + 0.5) * sx - 0.5;
      fx = std::min(std::max(fx, 0.0), double(iw - 1));
      const size_t x0 = size_t(fx), x1 = std::min(x0 + 1, iw - 1);
      const double wx = fx - double(x0);
      const double v = (1 - wy) * ((1 - wx) * in[y0 * iw + x0] + wx * in[y0 * iw + x1]) +
                       wy * ((1 - wx) * in[y1 * iw + x0] + wx * in[y1 * iw + x1]);
      out[y * ow + x] = float(v);
    }
  }
}

void resize_area(const float *in, size_t iw, size_t ih, float *out, size_t ow, size_t oh) {
  const double sx = double(iw) / double(ow), sy = double(ih) / double(oh);
  for (size_t y = 0; y < oh; ++y) {
    const double ya = double(y) * sy, yb = double(y + 1) * sy;
    for (size_t x = 0; x < ow; ++x) {
      const double xa = double(x) * sx, xb = double(x + 1) * sx;
      double acc = 0, wsum = 0;
      for (size_t iy = size_t(ya); iy < ih && double(iy) < yb; ++iy) {
        const double wy = std::min(yb, double(iy + 1)) - std::max(ya, double(iy));
        if (wy <= 0) continue;
        for (size_t ix = size_t(xa); ix < iw && double(ix) < xb; ++ix) {
          const double wx = std::min(xb, double(ix + 1)) - std::max(xa, double(ix));
          if (wx <= 0) continue;
          acc += wx * wy * in[iy * iw + ix];
          wsum += wx * wy;
        }
      }
      out[y * ow + x] = float(wsum > 0 ? acc / wsum : 0.0);
    }
  }
}

static void resize_to(const float *in, size_t iw, size_t ih, float *out, size_t side) {
  if (iw == side && ih == side) {
    std::copy(in, in + iw * ih, out);
  } else if (iw >= side && ih >= side) {
    resize_area(in, iw, ih, out, side, side);
  } else {
    resize_bilinear(in, iw, ih, out, side, side);
  }
}

// ------------------------------------------------------------------ IDX

am_status read_idx_u8(am_context *ctx, const std::string &path, std::vector<uint8_t> *data, std::vector<size_t> *dims) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot open IDX file %s (%s)", path.c_str(), std::strerror(errno));
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  unsigned char hdr[4];
  int n = gzread(f, hdr, 4);
  if (n != 4) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: too short for an IDX header", path.c_str());
  if (hdr[0] != 0 || hdr[1] != 0)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: not an IDX file (bad magic %02x %02x)", path.c_str(),
                           hdr[0], hdr[1]);
  if (hdr[2] != 0x08)
    return am_context_fail(ctx, AM_ERR_FORMAT,
                           "oneshot: %s: IDX element type 0x%02x is not supported (only unsigned byte 0x08)",
                           path.c_str(), hdr[2]);
  const int ndim = hdr[3];
  if (ndim < 1 || ndim > 4)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: IDX with %d dimensions (expected 1..4)", path.c_str(), ndim);
  dims->clear();
  size_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    if (gzread(f, b, 4) != 4)
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: truncated IDX header", path.c_str());
    const size_t v = (size_t(b[0]) << 24) | (size_t(b[1]) << 16) | (size_t(b[2]) << 8) | size_t(b[3]);
    dims->push_back(v);
    // Overflow-safe: the product is checked before it is formed (dims [16, 2^30, 2^30] must not wrap to 0).
    if (v != 0 && total > (size_t(1) << 34) / v)
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: IDX sizes are implausibly large", path.c_str());
    total *= v;
  }
  // The claim is never trusted: storage grows with the bytes actually read (steps doubling from 64 KiB up to
  // 16 MiB), so a short file claiming gigabytes costs one small step, not the claim, before it is called
  // truncated. Works the same for gzip streams, whose decompressed length is unknown until read.
  constexpr size_t kFirstStep = size_t(1) << 16, kStep = size_t(1) << 24;
  data->clear();
  size_t got = 0;
  while (got < total) {
    const size_t chunk = std::min(total - got, std::min(kStep, std::max(kFirstStep, got)));
    data->resize(got + chunk);
    const int r = gzread(f, data->data() + got, unsigned(chunk));
    if (r <= 0) break;
    got += size_t(r);
  }
  data->resize(got);
  if (got != total) {
    int err = 0;
    const char *msg = gzerror(f, &err);
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: truncated IDX data (%zu of %zu bytes%s%s)", path.c_str(),
                           got, total, err ? "; " : "", err ? msg : "");
  }
  return AM_OK;
}

am_status find_idx_files(am_context *ctx, const std::string &dir, const char *split, std::string *images,
                         std::string *labels) {
  const std::string base = dir + "/" + split;
  for (const char *suffix : {"-images-idx3-ubyte.gz", "-images-idx3-ubyte", "-images.idx3-ubyte"}) {
    if (is_file(base + suffix)) {
      *images = base + suffix;
      break;
    }
  }
  for (const char *suffix : {"-labels-idx1-ubyte.gz", "-labels-idx1-ubyte", "-labels.idx1-ubyte"}) {
    if (is_file(base + suffix)) {
      *labels = base + suffix;
      break;
    }
  }
  if (images->empty() || labels->empty())
    return am_context_fail(ctx, AM_ERR_NOT_FOUND,
                           "oneshot: no %s-images-idx3-ubyte[.gz] / %s-labels-idx1-ubyte[.gz] in %s (install "
                           "dataset-fashion-mnist or point the parameter at an MNIST-like directory)",
                           split, split, dir.c_str());
  return AM_OK;
}

am_status load_idx_pair(am_context *ctx, const std::string &images, const std::string &labels, size_t side,
                        ImageSet *out) {
  std::vector<uint8_t> img, lab;
  std::vector<size_t> di, dl;
  am_status st = read_idx_u8(ctx, images, &img, &di);
  if (st != AM_OK) return st;
  if ((st = read_idx_u8(ctx, labels, &lab, &dl)) != AM_OK) return st;
  if (di.size() != 3)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: images must be a 3-d IDX tensor (got %zu-d)",
                           images.c_str(), di.size());
  if (dl.size() != 1 || dl[0] != di[0])
    return am_context_fail(ctx, AM_ERR_SHAPE, "oneshot: %s holds %zu labels but %s holds %zu images", labels.c_str(),
                           dl.empty() ? size_t(0) : dl[0], images.c_str(), di[0]);
  const size_t n = di[0], h = di[1], w = di[2];
  if (h == 0 || w == 0) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: empty images", images.c_str());
  out->side = side;
  out->pixels.assign(n * side * side, 0.f);
  out->label.resize(n);
  std::vector<float> tmp(h * w);
  int maxlab = -1;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < h * w; ++k) tmp[k] = float(img[i * h * w + k]) / 255.f;
    resize_to(tmp.data(), w, h, out->pixels.data() + i * side * side, side);
    out->label[i] = lab[i];
    maxlab = std::max(maxlab, int(lab[i]));
  }
  out->class_names.clear();
  out->class_group.assign(size_t(maxlab + 1), 0);
  for (int c = 0; c <= maxlab; ++c) out->class_names.push_back(std::to_string(c));
  out->group_names = {"idx"};
  return AM_OK;
}

// ------------------------------------------------------------------ PNG

am_status read_png_grey(am_context *ctx, const std::string &path, std::vector<float> *grey, size_t *w, size_t *h) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&im, path.c_str()))
    return am_context_fail(ctx, is_file(path) ? AM_ERR_FORMAT : AM_ERR_IO, "oneshot: %s: cannot read PNG (%s)",
                           path.c_str(), im.message);
  // The header's size is a claim, checked before the buffer is allocated (a 60-byte file may claim
  // 10^6 x 10^6 pixels, whose byte count also wraps in libpng's 32-bit PNG_IMAGE_SIZE): every pixel takes
  // at least one bit of the inflated data and deflate expands at most 1032:1, so a file of n bytes holds
  // at most 8 * 1032 * n pixels; and a drawing is never larger than 2^28 pixels.
  struct stat sb;
  const double pixels = double(im.width) * double(im.height);
  const double bytes = ::stat(path.c_str(), &sb) == 0 ? double(sb.st_size) : 0.0;
  if (pixels > 8.0 * 1032.0 * bytes || pixels > double(size_t(1) << 28)) {
    const unsigned iw = im.width, ih = im.height;
    png_image_free(&im);
    if (pixels > double(size_t(1) << 28))
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: PNG of %ux%u pixels is too large (at most 2^28)",
                             path.c_str(), iw, ih);
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: corrupt PNG (%ux%u pixels claimed by a %.0f-byte file)",
                           path.c_str(), iw, ih, bytes);
  }
  im.format = PNG_FORMAT_GRAY;
  std::vector<uint8_t> buf(PNG_IMAGE_SIZE(im));
  png_color bg{255, 255, 255};
  if (!png_image_finish_read(&im, &bg, buf.data(), 0, nullptr)) {
    std::string msg = im.message;
    png_image_free(&im);
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: corrupt PNG (%s)", path.c_str(), msg.c_str());
  }
  *w = im.width;
  *h = im.height;
  grey->resize(size_t(im.width) * im.height);
  for (size_t k = 0; k < grey->size(); ++k) (*grey)[k] = float(buf[k]) / 255.f;
  png_image_free(&im);
  return AM_OK;
}

am_status load_png_tree(am_context *ctx, const std::string &root, size_t side, ImageSet *out) {
  std::vector<std::string> alphabets;
  if (!list_dir(root, 1, &alphabets))
    return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot open image directory %s", root.c_str());
  *out = ImageSet();
  out->side = side;
  std::vector<float> grey, small(side * side);
  for (const auto &a : alphabets) {
    std::vector<std::string> chars;
    list_dir(root + "/" + a, 1, &chars);
    const int32_t group = int32_t(out->group_names.size());
    bool any = false;
    for (const auto &c : chars) {
      std::vector<std::string> files;
      list_dir(root + "/" + a + "/" + c, 0, &files);
      const int32_t cls = int32_t(out->class_names.size());
      size_t count = 0;
      for (const auto &f : files) {
        if (f.size() < 4 || strcasecmp(f.c_str() + f.size() - 4, ".png") != 0) continue;
        size_t w = 0, h = 0;
        am_status st = read_png_grey(ctx, root + "/" + a + "/" + c + "/" + f, &grey, &w, &h);
        if (st != AM_OK) return st;
        resize_to(grey.data(), w, h, small.data(), side);
        out->pixels.insert(out->pixels.end(), small.begin(), small.end());
        out->label.push_back(cls);
        ++count;
      }
      if (count == 0) continue;
      out->class_names.push_back(a + "/" + c);
      out->class_group.push_back(group);
      any = true;
    }
    if (any) out->group_names.push_back(a);
  }
  if (out->class_names.empty())
    return am_context_fail(ctx, AM_ERR_NOT_FOUND,
                           "oneshot: no PNG images under %s (expected <alphabet>/<character>/<drawing>.png)",
                           root.c_str());
  return AM_OK;
}

// ------------------------------------------------------------------ Hershey

am_status parse_hershey(am_context *ctx, const std::string &text, const std::string &name,
                        std::vector<HersheyGlyph> *glyphs) {
  glyphs->clear();
  size_t pos = 0, line = 1;
  const size_t n = text.size();
  auto skip_newlines = [&]() {
    while (pos < n && (text[pos] == '\n' || text[pos] == '\r')) {
      if (text[pos] == '\n') ++line;
      ++pos;
    }
  };
  // Next payload character, skipping line breaks (wrapped glyph lines).
  auto next_char = [&](char *c) -> bool {
    skip_newlines();
    if (pos >= n) return false;
    *c = text[pos++];
    return true;
  };
  while (true) {
    skip_newlines();
    if (pos >= n) break;
    if (n - pos < 8)
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s line %zu: truncated glyph header", name.c_str(), line);
    const std::string id_s = text.substr(pos, 5), cnt_s = text.substr(pos + 5, 3);
    char *end = nullptr;
    const long id = std::strtol(id_s.c_str(), &end, 10);
    bool ok = end && (*end == '\0');
    long cnt = std::strtol(cnt_s.c_str(), &end, 10);
    ok = ok && end && (*end == '\0') && cnt >= 1 && cnt <= 100000;
    if (!ok)
      return am_context_fail(ctx, AM_ERR_FORMAT,
                             "oneshot: %s line %zu: bad glyph header '%s' (expected 5-digit id and 3-digit count)",
                             name.c_str(), line, text.substr(pos, 8).c_str());
    pos += 8;
    HersheyGlyph g;
    g.id = int(id);
    std::vector<std::pair<int, int>> stroke;
    for (long k = 0; k < cnt; ++k) {
      char a, b;
      if (!next_char(&a) || !next_char(&b))
        return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: glyph %ld ends after %ld of %ld vertices",
                               name.c_str(), id, k, cnt);
      if (a < ' ' || a > '~' || b < ' ' || b > '~')
        return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s line %zu: glyph %ld has a non-printable coordinate",
                               name.c_str(), line, id);
      if (k == 0) {
        g.left = a - 'R';
        g.right = b - 'R';
      } else if (a == ' ' && b == 'R') {
        if (!stroke.empty()) g.strokes.push_back(stroke);
        stroke.clear();
      } else {
        stroke.emplace_back(a - 'R', b - 'R');
      }
    }
    if (!stroke.empty()) g.strokes.push_back(stroke);
    // rest of the line must be empty
    while (pos < n && text[pos] != '\n') {
      if (text[pos] != '\r' && text[pos] != ' ')
        return am_context_fail(ctx, AM_ERR_FORMAT,
                               "oneshot: %s line %zu: glyph %ld has more data than its count %ld says", name.c_str(),
                               line, id, cnt);
      ++pos;
    }
    glyphs->push_back(std::move(g));
  }
  if (glyphs->empty()) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s: no glyphs", name.c_str());
  return AM_OK;
}

am_status read_hershey_file(am_context *ctx, const std::string &path, std::vector<HersheyGlyph> *glyphs) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot open Hershey font %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_hershey(ctx, ss.str(), path, glyphs);
}

double glyph_ink(const HersheyGlyph &g, double *bbox_w, double *bbox_h) {
  double len = 0, x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
  for (const auto &s : g.strokes)
    for (size_t k = 0; k < s.size(); ++k) {
      x0 = std::min(x0, double(s[k].first));
      x1 = std::max(x1, double(s[k].first));
      y0 = std::min(y0, double(s[k].second));
      y1 = std::max(y1, double(s[k].second));
      if (k) len += std::hypot(double(s[k].first - s[k - 1].first), double(s[k].second - s[k - 1].second));
    }
  if (bbox_w) *bbox_w = x1 >= x0 ? x1 - x0 : 0;
  if (bbox_h) *bbox_h = y1 >= y0 ? y1 - y0 : 0;
  return len;
}

void render_glyph(const HersheyGlyph &g, size_t side, const DrawerSettings &d, am_rng *rng, bool plain, float *out) {
  double bw = 0, bh = 0;
  glyph_ink(g, &bw, &bh);
  double x0 = 1e9, y0 = 1e9;
  for (const auto &s : g.strokes)
    for (const auto &p : s) {
      x0 = std::min(x0, double(p.first));
      y0 = std::min(y0, double(p.second));
    }
  const double cx = x0 + bw / 2, cy = y0 + bh / 2;
  const double fit = 0.75 * double(side);
  double base = std::min(1.0 * double(side) / 32.0, fit / std::max({bw, bh, 1.0}));
  auto U = [&](double lo, double hi) { return plain ? 0.5 * (lo + hi) : lo + (hi - lo) * am_rng_uniform(rng); };
  auto N = [&](double sd) { return plain ? 0.0 : sd * am_rng_normal(rng); };
  const double th = U(-d.rotate_deg, d.rotate_deg) * M_PI / 180.0, sh = U(-d.shear, d.shear);
  const double sx = U(d.scale_min, d.scale_max) * base, sy = U(d.scale_min, d.scale_max) * base;
  const double tx = U(-d.shift_px, d.shift_px), ty = U(-d.shift_px, d.shift_px);
  const double width = plain ? 0.5 * (d.width_min + d.width_max) : U(d.width_min, d.width_max);
  // affine: p' = R(th) · [[1, sh], [0, 1]] · diag(sx, sy) · (p − c) + centre + t
  const double c = std::cos(th), s = std::sin(th);
  const double m00 = c * sx, m01 = c * sh * sy - s * sy, m10 = s * sx, m11 = s * sh * sy + c * sy;
  const double ox = double(side) / 2 + tx, oy = double(side) / 2 + ty;
  std::vector<std::vector<std::pair<double, double>>> pts;
  for (const auto &st : g.strokes) {
    const double dx = N(d.jitter), dy = N(d.jitter);
    std::vector<std::pair<double, double>> v;
    for (const auto &p : st) {
      const double gx = double(p.first) - cx + dx + N(d.jitter), gy = double(p.second) - cy + dy + N(d.jitter);
      v.emplace_back(m00 * gx + m01 * gy + ox, m10 * gx + m11 * gy + oy);
    }
    pts.push_back(std::move(v));
  }
  std::vector<float> ink(side * side, 0.f);
  const double half = width / 2;
  for (const auto &v : pts) {
    for (size_t k = 0; k < v.size(); ++k) {
      const auto a = v[k];
      const auto b = k + 1 < v.size() ? v[k + 1] : v[k];
      if (k + 1 == v.size() && v.size() > 1) break;  // single points drawn as dots only
      const double lo_x = std::min(a.first, b.first) - half - 1, hi_x = std::max(a.first, b.first) + half + 1;
      const double lo_y = std::min(a.second, b.second) - half - 1, hi_y = std::max(a.second, b.second) + half + 1;
      const long ix0 = std::max(0L, long(std::floor(lo_x))), ix1 = std::min(long(side) - 1, long(std::ceil(hi_x)));
      const long iy0 = std::max(0L, long(std::floor(lo_y))), iy1 = std::min(long(side) - 1, long(std::ceil(hi_y)));
      const double ex = b.first - a.first, ey = b.second - a.second, el = ex * ex + ey * ey;
      for (long iy = iy0; iy <= iy1; ++iy)
        for (long ix = ix0; ix <= ix1; ++ix) {
          const double px = double(ix) + 0.5, py = double(iy) + 0.5;
          double t = el > 0 ? ((px - a.first) * ex + (py - a.second) * ey) / el : 0;
          t = std::min(1.0, std::max(0.0, t));
          const double qx = a.first + t * ex - px, qy = a.second + t * ey - py;
          const double dist = std::sqrt(qx * qx + qy * qy);
          const double val = std::min(1.0, std::max(0.0, half + 0.5 - dist));
          float &o = ink[size_t(iy) * side + size_t(ix)];
          o = std::max(o, float(val));
        }
    }
  }
  for (size_t k = 0; k < side * side; ++k) out[k] = 1.f - ink[k];
}

const HersheyFamily *hershey_families(size_t *n) {
  static const HersheyFamily kFamilies[] = {
      {"latin",
       "futural futuram rowmans rowmand rowmant timesr timesrb timesi timesib scripts scriptc cursive gothgbt gothgrt "
       "gothiceng gothicger gothicita gothitt",
       0},
      {"japanese", "japanese", 0},
      {"astrology", "astrology", 0},
      {"music", "music", 0},
      {"markers", "markers", 0},
      {"mathupp", "mathupp", 0},
      {"greek", "greek greekc greeks timesg", 1},
      {"cyrillic", "cyrillic cyrilc_1", 1},
      {"meteorology", "meteorology", 1},
      {"mathlow", "mathlow", 1},
      {"symbolic", "symbolic", 1},
  };
  *n = sizeof kFamilies / sizeof kFamilies[0];
  return kFamilies;
}

am_status render_hershey(am_context *ctx, const std::string &dir, size_t side, size_t drawers, uint64_t seed,
                         ImageSet *background, ImageSet *evaluation) {
  size_t nf = 0;
  const HersheyFamily *fam = hershey_families(&nf);
  *background = ImageSet();
  *evaluation = ImageSet();
  background->side = evaluation->side = side;
  am_rng root;
  am_rng_init(&root, seed, 0x0ae5);
  const DrawerSettings ds;
  size_t global_char = 0, fonts_found = 0;
  for (size_t fi = 0; fi < nf; ++fi) {
    std::vector<std::vector<HersheyGlyph>> fonts;
    std::istringstream names(fam[fi].fonts);
    std::string stem;
    while (names >> stem) {
      const std::string path = dir + "/" + stem + ".jhf";
      if (!is_file(path)) continue;
      std::vector<HersheyGlyph> gl;
      am_status st = read_hershey_file(ctx, path, &gl);
      if (st != AM_OK) return st;
      fonts.push_back(std::move(gl));
      ++fonts_found;
    }
    if (fonts.empty()) continue;
    ImageSet &dst = fam[fi].evaluation ? *evaluation : *background;
    const int32_t group = int32_t(dst.group_names.size());
    dst.group_names.push_back(fam[fi].name);
    const bool multi = fonts.size() > 1;
    size_t positions = 0;
    for (const auto &f : fonts) positions = std::max(positions, f.size());
    const bool greek_like = std::strcmp(fam[fi].name, "greek") == 0 || std::strcmp(fam[fi].name, "cyrillic") == 0;
    for (size_t gpos = 0; gpos < positions; ++gpos) {
      // Greek / Cyrillic fonts keep their Latin punctuation and digits at the other positions: letters only.
      const int ascii = int(gpos) + 32;
      if (greek_like && !((ascii >= 'A' && ascii <= 'Z') || (ascii >= 'a' && ascii <= 'z'))) continue;
      std::vector<const HersheyGlyph *> variants;
      for (const auto &f : fonts) {
        if (gpos >= f.size()) continue;
        double bw, bh;
        const double len = glyph_ink(f[gpos], &bw, &bh);
        if (len < 8.0 || std::max(bw, bh) < 5.0) continue;  // empty / near-empty (dots, commas, spaces)
        variants.push_back(&f[gpos]);
      }
      if (variants.empty() || (multi && variants.size() * 2 < fonts.size())) continue;
      const int32_t cls = int32_t(dst.class_names.size());
      dst.class_names.push_back(std::string(fam[fi].name) + "/" + std::to_string(gpos));
      dst.class_group.push_back(group);
      am_rng r;
      am_rng_split(&root, global_char++, &r);
      std::vector<float> img(side * side);
      for (size_t k = 0; k < drawers; ++k) {
        const HersheyGlyph *g = variants[variants.size() == 1 ? 0 : size_t(am_rng_below(&r, variants.size()))];
        render_glyph(*g, side, ds, &r, false, img.data());
        dst.pixels.insert(dst.pixels.end(), img.begin(), img.end());
        dst.label.push_back(cls);
      }
    }
    if (am_context_progress(ctx, double(fi + 1), double(nf), "oneshot: rendering Hershey glyphs")) return AM_CANCELLED;
  }
  if (fonts_found == 0)
    return am_context_fail(ctx, AM_ERR_NOT_FOUND,
                           "oneshot: no Hershey fonts (*.jhf) in %s (apt-get install hershey-fonts-data, or set "
                           "hershey_dir=DIR)",
                           dir.c_str());
  if (background->class_names.size() < 4 || evaluation->class_names.size() < 2)
    return am_context_fail(ctx, AM_ERR_NOT_FOUND, "oneshot: too few Hershey glyph classes in %s (%zu background, %zu evaluation)",
                           dir.c_str(), background->class_names.size(), evaluation->class_names.size());
  return AM_OK;
}

// ------------------------------------------------------------------ cache

am_status save_imageset(am_context *ctx, const std::string &dir, const std::string &stem, const ImageSet &s) {
  const size_t shape[3] = {s.size(), s.side, s.side};
  const am_array_view pixels = am_array_view_make(AM_F32, 3, shape, 0, s.pixels.data());
  am_status st = am_npy_write(ctx, (dir + "/" + stem + "_pixels.npy").c_str(), &pixels);
  if (st != AM_OK) return st;
  const am_array_view labels = am_array_view_make(AM_I32, 1, shape, 0, s.label.data());
  if ((st = am_npy_write(ctx, (dir + "/" + stem + "_labels.npy").c_str(), &labels)) != AM_OK) return st;
  std::ofstream f(dir + "/" + stem + "_classes.txt", std::ios::trunc);
  f << s.group_names.size() << "\n";
  for (const auto &g : s.group_names) f << g << "\n";
  f << s.class_names.size() << "\n";
  for (size_t c = 0; c < s.class_names.size(); ++c) f << s.class_group[c] << " " << s.class_names[c] << "\n";
  if (!f) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot write the image cache in %s", dir.c_str());
  return AM_OK;
}

am_status load_imageset(am_context *ctx, const std::string &dir, const std::string &stem, ImageSet *s) {
  std::ifstream f(dir + "/" + stem + "_classes.txt");
  if (!f) return AM_ERR_NOT_FOUND;
  ImageSet out;
  size_t ng = 0, nc = 0;
  std::string line;
  if (!(f >> ng)) return AM_ERR_FORMAT;
  std::getline(f, line);
  for (size_t i = 0; i < ng && std::getline(f, line); ++i) out.group_names.push_back(line);
  if (!(f >> nc)) return AM_ERR_FORMAT;
  for (size_t i = 0; i < nc; ++i) {
    int32_t g;
    std::string name;
    if (!(f >> g >> name)) return AM_ERR_FORMAT;
    out.class_group.push_back(g);
    out.class_names.push_back(name);
  }
  am_array *px = nullptr, *lb = nullptr;
  am_status st = am_npy_read(ctx, (dir + "/" + stem + "_pixels.npy").c_str(), &px);
  if (st != AM_OK) return st;
  st = am_npy_read(ctx, (dir + "/" + stem + "_labels.npy").c_str(), &lb);
  if (st != AM_OK) {
    am_array_destroy(&px);
    return st;
  }
  const am_array_view pv = am_array_get_view(px), lv = am_array_get_view(lb);
  st = AM_OK;
  if (pv.dtype != AM_F32 || pv.ndim != 3 || pv.shape[1] != pv.shape[2] || lv.dtype != AM_I32 || lv.ndim != 1 ||
      lv.shape[0] != pv.shape[0]) {
    st = AM_ERR_FORMAT;
  } else {
    out.side = pv.shape[1];
    const float *pd = static_cast<const float *>(pv.data);
    out.pixels.assign(pd, pd + am_array_view_count(&pv));
    const int32_t *ld = static_cast<const int32_t *>(lv.data);
    out.label.assign(ld, ld + lv.shape[0]);
    for (int32_t c : out.label)
      if (c < 0 || size_t(c) >= nc) st = AM_ERR_FORMAT;
  }
  am_array_destroy(&px);
  am_array_destroy(&lb);
  if (st == AM_OK) *s = std::move(out);
  return st;
}

}  // namespace am::oneshot
