// The cairo back end of the plot writer (svg.hpp): a Drawing's primitives replayed on a PDF or an image surface.
// Only built with -Dcairo. Coordinates are the SVG's user units; the PDF page is width × height pt (1 px = 1 pt,
// the size a journal's column widths are given in), the PNG is scaled.
#include "svg.hpp"

#include <cairo-pdf.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace am::svg {

namespace {

struct Colour {
  double r = 0, g = 0, b = 0;
  bool none = true;
};

// The colours the writer uses: "#rgb", "#rrggbb", "white", "black"; "" or anything else = none.
Colour parse_colour(const std::string &s) {
  Colour c;
  if (s == "white") return {1, 1, 1, false};
  if (s == "black") return {0, 0, 0, false};
  if (s.size() != 4 && s.size() != 7) return c;
  if (s[0] != '#') return c;
  char *end = nullptr;
  const unsigned long v = std::strtoul(s.c_str() + 1, &end, 16);
  if (*end) return c;
  if (s.size() == 4) {
    c.r = static_cast<double>((v >> 8) & 0xf) / 15.0;
    c.g = static_cast<double>((v >> 4) & 0xf) / 15.0;
    c.b = static_cast<double>(v & 0xf) / 15.0;
  } else {
    c.r = static_cast<double>((v >> 16) & 0xff) / 255.0;
    c.g = static_cast<double>((v >> 8) & 0xff) / 255.0;
    c.b = static_cast<double>(v & 0xff) / 255.0;
  }
  c.none = false;
  return c;
}

bool set_colour(cairo_t *cr, const std::string &s) {
  const Colour c = parse_colour(s);
  if (!c.none) cairo_set_source_rgb(cr, c.r, c.g, c.b);
  return !c.none;
}

// Stroke the current path as the SVG would: width, butt caps, miter joins, "6 4" dashes.
void stroke(cairo_t *cr, const Op &op) {
  if (!set_colour(cr, op.stroke)) {
    cairo_new_path(cr);
    return;
  }
  cairo_set_line_width(cr, op.stroke_width);
  const double dash[] = {6, 4};
  cairo_set_dash(cr, dash, op.dashed ? 2 : 0, 0);
  cairo_stroke(cr);
}

// Fill (and then outline) the current path.
void paint_path(cairo_t *cr, const Op &op) {
  if (set_colour(cr, op.fill)) cairo_fill_preserve(cr);
  stroke(cr, op);
}

// Real text in DejaVu Sans (the SVG's first font) at the SVG's anchor and baseline, turned about the anchor.
void draw_text(cairo_t *cr, const Op &op) {
  cairo_save(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         op.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, op.font);
  cairo_translate(cr, op.x, op.y);
  if (op.rotate != 0) cairo_rotate(cr, op.rotate * M_PI / 180.0);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, op.text.c_str(), &ext);
  const double shift = op.anchor == 'm' ? ext.x_advance / 2 : op.anchor == 'e' ? ext.x_advance : 0.0;
  cairo_move_to(cr, -shift, 0);
  if (!set_colour(cr, op.fill)) cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_show_text(cr, op.text.c_str());
  cairo_restore(cr);
}

void replay(cairo_t *cr, const Drawing &d) {
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
  for (const Op &op : d.ops) {
    switch (op.kind) {
      case Op::Rect:
        cairo_rectangle(cr, op.x, op.y, op.w, op.h);
        paint_path(cr, op);
        break;
      case Op::Line:
        cairo_move_to(cr, op.x, op.y);
        cairo_line_to(cr, op.w, op.h);
        stroke(cr, op);
        break;
      case Op::Circle:
        cairo_new_sub_path(cr);
        cairo_arc(cr, op.x, op.y, op.w, 0, 2 * M_PI);
        paint_path(cr, op);
        break;
      case Op::Polyline:
        for (size_t i = 0; i + 1 < op.points.size(); i += 2)
          i == 0 ? cairo_move_to(cr, op.points[0], op.points[1]) : cairo_line_to(cr, op.points[i], op.points[i + 1]);
        stroke(cr, op);
        break;
      case Op::Text: draw_text(cr, op); break;
      case Op::ClipBegin:
        cairo_save(cr);
        cairo_rectangle(cr, op.x, op.y, op.w, op.h);
        cairo_clip(cr);
        break;
      case Op::ClipEnd: cairo_restore(cr); break;
    }
  }
}

cairo_status_t append(void *closure, const unsigned char *data, unsigned int length) {
  static_cast<std::string *>(closure)->append(reinterpret_cast<const char *>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

// The page of a drawing (pt): its own size, or the page fit_page put it on.
double page_w(const Drawing &d) { return d.page_width > 0 ? d.page_width : d.width; }
double page_h(const Drawing &d) { return d.page_height > 0 ? d.page_height : d.height; }

// Replays `d` on `s` (scaled; on a page of another size, scaled uniformly and centred as the SVG's viewBox is);
// "" or cairo's message.
std::string paint(cairo_surface_t *s, const Drawing &d, double scale) {
  Context cr(cairo_create(s), cairo_destroy);
  cairo_scale(cr.get(), scale, scale);
  if (d.page_width > 0 && d.page_height > 0 && d.width > 0 && d.height > 0) {
    const double k = std::min(d.page_width / d.width, d.page_height / d.height);
    cairo_translate(cr.get(), (d.page_width - k * d.width) / 2, (d.page_height - k * d.height) / 2);
    cairo_scale(cr.get(), k, k);
  }
  replay(cr.get(), d);
  cairo_show_page(cr.get());
  const cairo_status_t st = cairo_status(cr.get());
  return st == CAIRO_STATUS_SUCCESS ? std::string() : cairo_status_to_string(st);
}

}  // namespace

std::string pdf_bytes(const Drawing &d, std::string *error) {
  std::string out;
  {
    Surface s(cairo_pdf_surface_create_for_stream(append, &out, page_w(d), page_h(d)), cairo_surface_destroy);
    // A fixed date: the same drawing gives the same file (the SVG has none either).
    cairo_pdf_surface_set_metadata(s.get(), CAIRO_PDF_METADATA_CREATE_DATE, "2000-01-01T00:00:00Z");
    cairo_pdf_surface_set_metadata(s.get(), CAIRO_PDF_METADATA_CREATOR, "attnmech");
    *error = paint(s.get(), d, 1.0);
    cairo_surface_finish(s.get());
    if (error->empty() && cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS)
      *error = cairo_status_to_string(cairo_surface_status(s.get()));
  }
  return error->empty() ? out : std::string();
}

std::string png_bytes(const Drawing &d, double scale, std::string *error) {
  const int w = static_cast<int>(std::lround(page_w(d) * scale)), h = static_cast<int>(std::lround(page_h(d) * scale));
  Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h), cairo_surface_destroy);
  *error = paint(s.get(), d, scale);
  std::string out;
  if (error->empty()) {
    const cairo_status_t st = cairo_surface_write_to_png_stream(s.get(), append, &out);
    if (st != CAIRO_STATUS_SUCCESS) *error = cairo_status_to_string(st);
  }
  return error->empty() ? out : std::string();
}

}  // namespace am::svg
