// The plot writer's two back ends (tools/report/svg.hpp, cairo_out.cpp): the primitives of a drawing are the
// SVG's elements, and with cairo the PDF and the PNG of the same drawing have the SVG's size and colours.
#include <doctest/doctest.h>

#include "svg.hpp"

#include <cmath>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#if AM_REPORT_CAIRO
#include <cairo.h>
#endif

namespace {

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

size_t count_ops(const am::svg::Drawing &d, am::svg::Op::Kind k) {
  size_t n = 0;
  for (const auto &op : d.ops) n += op.kind == k;
  return n;
}

}  // namespace

TEST_CASE("drawing: one primitive per SVG element, in both plot kinds") {
  am::svg::LinePlot p;
  p.title = "t";
  p.xlabel = "x";
  p.ylabel = "y";
  am::svg::Series s;
  s.name = "s";
  s.x = {1, 2, 3};
  s.y = {1, 4, 9};
  p.series.push_back(s);
  const am::svg::Drawing d = am::svg::draw(p);
  CHECK(d.svg == am::svg::render(p));
  CHECK(count_ops(d, am::svg::Op::Text) == count(d.svg, "<text "));
  CHECK(count_ops(d, am::svg::Op::Line) == count(d.svg, "<line "));
  CHECK(count_ops(d, am::svg::Op::Circle) == count(d.svg, "<circle "));
  CHECK(count_ops(d, am::svg::Op::Polyline) == count(d.svg, "<polyline "));
  CHECK(count_ops(d, am::svg::Op::Rect) + count_ops(d, am::svg::Op::ClipBegin) == count(d.svg, "<rect "));
  CHECK(d.width == std::atoi(d.svg.c_str() + d.svg.find("width=\"") + 7));

  am::svg::HeatMap h;
  h.rows = h.cols = 2;
  h.values = {1, -1, 0.5, 0};
  const am::svg::Drawing a = am::svg::draw(h), b = am::svg::draw(h);
  const am::svg::Drawing both = am::svg::hstack(std::vector<am::svg::Drawing>{a, b});
  CHECK(both.svg == am::svg::hstack(std::vector<std::string>{a.svg, b.svg}));
  CHECK(both.width == a.width + b.width);
  CHECK(both.ops.size() == a.ops.size() + b.ops.size());
  CHECK(both.ops[a.ops.size()].x == doctest::Approx(a.ops[0].x + a.width));  // the second part moved right
}

#if AM_REPORT_CAIRO

namespace {

// One bar of a known colour from 0 to 10 (the axis runs from 0).
am::svg::BarChart one_bar() {
  am::svg::BarChart b;
  b.title = "bars ± s.e.";
  b.categories = {"a", "b"};
  b.groups.push_back({"g", {10, 4}, "#2ca02c", {}});
  return b;
}

cairo_status_t read_from(void *closure, unsigned char *data, unsigned int length) {
  auto *s = static_cast<std::pair<const std::string *, size_t> *>(closure);
  if (s->second + length > s->first->size()) return CAIRO_STATUS_READ_ERROR;
  std::copy_n(s->first->data() + s->second, length, data);
  s->second += length;
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

TEST_CASE("cairo: the PDF is one page of the SVG's size in pt") {
  const am::svg::Drawing d = am::svg::draw(one_bar());
  std::string err;
  const std::string pdf = am::svg::pdf_bytes(d, &err);
  REQUIRE(err.empty());
  CHECK(pdf.compare(0, 5, "%PDF-") == 0);
  CHECK(pdf.find("%%EOF") != std::string::npos);
  // Page objects: "/Type /Page" not followed by "s" (the page tree is /Pages); "/Count 1" in the tree.
  const std::regex page(R"(/Type\s*/Page[^s])");
  CHECK(std::distance(std::sregex_iterator(pdf.begin(), pdf.end(), page), std::sregex_iterator()) == 1);
  CHECK(pdf.find("/Count 1") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(pdf, m, std::regex(R"(/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\])")));
  CHECK(std::stod(m[1]) == d.width);  // 1 px = 1 pt
  CHECK(std::stod(m[2]) == d.height);
  CHECK(pdf.find("DejaVu") != std::string::npos);  // text is text, in the SVG's font
  CHECK(am::svg::pdf_bytes(d, &err) == pdf);      // no date or id that changes between runs
}

TEST_CASE("cairo: the PNG is the SVG's size × scale and a bar's centre is the bar's colour") {
  const am::svg::BarChart b = one_bar();
  const am::svg::Drawing d = am::svg::draw(b);
  std::string err;
  const std::string png = am::svg::png_bytes(d, 2.0, &err);
  REQUIRE(err.empty());
  std::pair<const std::string *, size_t> src{&png, 0};
  cairo_surface_t *img = cairo_image_surface_create_from_png_stream(read_from, &src);
  REQUIRE(cairo_surface_status(img) == CAIRO_STATUS_SUCCESS);
  CHECK(cairo_image_surface_get_width(img) == 2 * d.width);
  CHECK(cairo_image_surface_get_height(img) == 2 * d.height);
  // The first bar: the first filled rect of the bar colour in the drawing (its place comes from the layout, the
  // same numbers the SVG's <rect> has).
  const am::svg::Op *bar = nullptr;
  for (const auto &op : d.ops)
    if (op.kind == am::svg::Op::Rect && op.fill == "#2ca02c" && op.h > 20) {
      bar = &op;
      break;
    }
  REQUIRE(bar);
  cairo_surface_flush(img);
  const unsigned char *px = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  const int cx = static_cast<int>(2 * (bar->x + bar->w / 2)), cy = static_cast<int>(2 * (bar->y + bar->h / 2));
  const uint32_t v = *reinterpret_cast<const uint32_t *>(px + cy * stride + 4 * cx);  // native-endian xRGB
  CHECK(((v >> 16) & 0xff) == 0x2c);  // exact: the centre is far from any edge, so no anti-aliasing
  CHECK(((v >> 8) & 0xff) == 0xa0);
  CHECK((v & 0xff) == 0x2c);
  // A corner of the page is the white background.
  const uint32_t corner = *reinterpret_cast<const uint32_t *>(px + 2 * stride + 8);
  CHECK((corner & 0xffffff) == 0xffffff);
  cairo_surface_destroy(img);
}

#endif

#include <common/labels.hpp>

TEST_CASE("labels: the document's table first, then generic rules") {
  using am::labels::display;
  using am::labels::human;
  const am::labels::Table names = {{"action", "action S"}, {"gp.test.accuracy", "GP test accuracy"}};
  CHECK(human("runs.0.action", &names) == "action S");  // a sweep's metric path, named by the document
  CHECK(human("runs.0.action") == "action");            // no table: the key itself
  CHECK(human("runs.3.gp.test.accuracy", &names) == "GP test accuracy");  // the longest tail wins
  CHECK(human("runs.12.test.accuracy", &names) == "test accuracy");       // not named: dots as spaces
  CHECK(human("train_loss") == "train loss");
  CHECK(human("epsilon_star") == "ε*");  // a Greek letter's name and "_star"
  CHECK(human("lambda") == "λ");
  CHECK(human("epsilon_star_train") == "ε* train");  // token by token: the curve's reference level on train data
  CHECK(human("beta_heads") == "β heads");
  CHECK(human("star_count") == "star count");  // "star" alone is a word
  CHECK(display("train_loss") == "train loss");
  CHECK(display("action", &names) == "action S");  // a plain word the table names
  CHECK(display("theta") == "theta");               // a plain word is a label already
  CHECK(display("RN all") == "RN all");             // so is anything with a space
  CHECK(display("accuracy (mean +- s.e.)") == "accuracy (mean ± s.e.)");
}

TEST_CASE("heat map: labelled colour bar and break markers where a trimmed axis jumps") {
  am::svg::HeatMap h;
  h.rows = h.cols = 4;
  h.values = std::vector<double>(16, 0.5);
  h.row_labels = h.col_labels = {"0", "1", "98", "99"};
  const am::svg::Drawing plain = am::svg::draw(h);
  h.value_label = "U";
  h.row_breaks = h.col_breaks = {2};
  const am::svg::Drawing d = am::svg::draw(h);
  CHECK(d.width == plain.width + 22);  // room for the turned label
  CHECK(d.svg.find(">U</text>") != std::string::npos);
  CHECK(d.svg.find("rotate(-90") != std::string::npos);
  // One white gap line per break across the map: the row gap at the boundary of shown rows 1 and 2, y = top 16 +
  // 2 cells of 480 / 4 px; the column gap vertical.
  size_t gaps = 0, horizontal = 0;
  for (const auto &op : d.ops)
    if (op.kind == am::svg::Op::Line && op.stroke == "white") {
      ++gaps;
      if (op.y == op.h) {
        ++horizontal;
        CHECK(op.y == doctest::Approx(16 + 2 * 120));
      } else {
        CHECK(op.x == doctest::Approx(op.w));
      }
    }
  CHECK(gaps == 2);
  CHECK(horizontal == 1);
  CHECK(count(d.svg, "stroke=\"white\" stroke-width=\"3\"") == 2);
  CHECK(count(d.svg, "<line ") == count(plain.svg, "<line ") + 2 + 4);  // the gaps and two "//" of two strokes
}

#include <attnmech/report.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

TEST_CASE("report plots: labels from report.labels, dashed train curve, trimmed heat map breaks, ±") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attnmech-labels-" + std::to_string(getpid()));
  fs::create_directories(dir);
  // 40 x 40 matrix trimmed to the first and last 5 rows and columns: the shown indices jump 4 → 35.
  std::string m = "[";
  for (int i = 0; i < 40; ++i) {
    m += i ? ",[" : "[";
    for (int j = 0; j < 40; ++j) m += (j ? "," : "") + std::to_string((i + j) % 7 - 3);
    m += "]";
  }
  m += "]";
  std::ofstream(dir / "results.json")
      << R"J({"status": "ok", "runs": [{"curves": {"epoch": [1, 2, 3], "train_loss": [3, 2, 1], "test_loss": [3, 2, 1]},)J"
      << R"J("epsilon_star": 0.5, "W": )J" << m << R"J(}], "report": {"labels": {"W": "weights W"}, "plots": [)J"
      << R"J({"file": "curves", "kind": "lines", "title": "loss (mean +- s.e.)", "x_label": "epoch", "y_label": "loss", "series": [)J"
      << R"J({"label": "train_loss", "x": "runs.0.curves.epoch", "y": "runs.0.curves.train_loss", "style": "line"},)J"
      << R"J({"label": "test_loss", "x": "runs.0.curves.epoch", "y": "runs.0.curves.test_loss", "style": "line"},)J"
      << R"J({"label": "epsilon_star", "y": "runs.0.epsilon_star", "style": "hline"}]},)J"
      << R"J({"file": "W", "kind": "heatmap", "trim": 5, "panels": [{"matrix": "runs.0.W"}]}]}})J";
  am_record *doc = nullptr;
  REQUIRE(am_report_read(nullptr, (dir / "results.json").c_str(), &doc) == AM_OK);
  am_report_plot_options po;  // every format this build has (SVG, PDF and PNG with cairo)
  am_report_plot_default_options(&po);
  po.formats = am_report_formats_available();
  REQUIRE(am_report_plot_with_options(nullptr, doc, dir.c_str(), &po) == AM_OK);
  am_record_destroy(&doc);
  auto slurp = [](const fs::path &p) {
    std::ostringstream s;
    s << std::ifstream(p).rdbuf();
    return s.str();
  };
  const std::string curves = slurp(dir / "curves.svg"), w = slurp(dir / "W.svg");
  CHECK(curves.find(">train loss</text>") != std::string::npos);  // legend: human names
  CHECK(curves.find(">test loss</text>") != std::string::npos);
  CHECK(curves.find(">ε*</text>") != std::string::npos);
  CHECK(curves.find("train_loss") == std::string::npos);
  CHECK(curves.find("loss (mean ± s.e.)") != std::string::npos);
  // The train curve is dashed and painted after the solid test curve it equals, so its dashes show on top of it
  // (series 0 keeps palette colour 0, series 1 colour 1).
  const size_t first = curves.find("<polyline"), second = curves.find("<polyline", first + 1);
  REQUIRE(second != std::string::npos);
  const std::string test_line = curves.substr(first, curves.find('>', first) - first);
  const std::string train_line = curves.substr(second, curves.find('>', second) - second);
  CHECK(test_line.find("stroke-dasharray") == std::string::npos);
  CHECK(test_line.find("#d62728") != std::string::npos);
  CHECK(train_line.find("stroke-dasharray") != std::string::npos);
  CHECK(train_line.find("#1f77b4") != std::string::npos);
  CHECK(w.find(">weights W</text>") != std::string::npos);  // the colour bar's label, named by report.labels
  CHECK(count(w, "stroke=\"white\" stroke-width=\"3\"") == 2);  // one break on each trimmed axis
#if AM_REPORT_CAIRO
  CHECK(fs::file_size(dir / "W.pdf") > 0);
  CHECK(fs::file_size(dir / "curves.png") > 0);
#endif
  fs::remove_all(dir);
}

namespace {

// The legend's text lines of a drawing (11-unit text anchored at its start), in drawing order.
std::vector<const am::svg::Op *> legend_texts(const am::svg::Drawing &d) {
  std::vector<const am::svg::Op *> out;
  for (const auto &op : d.ops)
    if (op.kind == am::svg::Op::Text && op.font == 11 && op.anchor == 's') out.push_back(&op);
  return out;
}

// Whether every label is drawn whole: its lines, in order, joined by the spaces (or nothing) they were cut at.
bool labels_whole(const am::svg::Drawing &d, const std::vector<std::string> &labels) {
  const auto texts = legend_texts(d);
  size_t k = 0;
  for (const auto &label : labels) {
    std::string got;
    while (k < texts.size() && got.size() < label.size()) {
      got += (got.empty() || label[got.size()] != ' ' ? "" : " ") + texts[k++]->text;
    }
    if (got != label) return false;
  }
  return k == texts.size();
}

#if AM_REPORT_CAIRO
// The text's extent as cairo draws it (DejaVu Sans, the SVG's first font): [x, x + advance] must lie in [0, width].
bool inside_canvas(const am::svg::Drawing &d, std::string *why) {
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 4, 4);
  cairo_t *cr = cairo_create(s);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  bool ok = true;
  for (const am::svg::Op *op : legend_texts(d)) {
    cairo_set_font_size(cr, op->font);
    cairo_text_extents_t e;
    cairo_text_extents(cr, op->text.c_str(), &e);
    if (op->x + e.x_advance > d.width + 0.5 || op->y > d.height) {
      ok = false;
      *why += "'" + op->text + "' ends at x = " + std::to_string(op->x + e.x_advance) + ", y = " +
              std::to_string(op->y) + " on a canvas " + std::to_string(d.width) + " x " + std::to_string(d.height) + "\n";
    }
  }
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return ok;
}
#endif

}  // namespace

TEST_CASE("legend: long labels stay on the canvas, whole, and series that differ only at their end stay apart") {
  // The sweep plot of `sweep markov-paper` (runs_0_test_accuracy_vs_width): eight series "config=… temperature=…";
  // the two good_denoising ones used to run past the right edge, cut in "temperature=0." — indistinguishable.
  std::vector<std::string> labels;
  for (const char *c : {"all", "good", "good_denoising", "2paths"})
    for (const char *t : {"0.01", "0.1"}) labels.push_back(std::string("config=") + c + " temperature=" + t);
  labels.push_back("a_single_word_label_far_wider_than_any_legend_could_ever_be_" + std::string(60, 'x') + "_end1");
  labels.push_back("a_single_word_label_far_wider_than_any_legend_could_ever_be_" + std::string(60, 'x') + "_end2");
  labels.push_back("ε* test (mean ± s.e. over 30 seeds) of the uncollapsed model at a = 0.5, d = 20, × 3");
  am::svg::LinePlot p;
  p.title = "accuracy vs width";
  p.xlabel = "width";
  p.ylabel = "accuracy";
  p.logx = true;
  for (size_t i = 0; i < labels.size(); ++i) {
    am::svg::Series s;
    s.name = labels[i];
    s.x = {10, 100, 1000};
    s.y = {0.5 + 0.01 * i, 0.6, 0.7};
    p.series.push_back(s);
  }
  am::svg::BarChart b;
  b.categories = {"a", "b"};
  for (size_t i = 0; i < 3; ++i) b.groups.push_back({labels[i + 4], {1.0, 2.0}, "", {}});
  for (bool below : {false, true}) {
    CAPTURE(below);
    p.legend_below = b.legend_below = below;
    p.width = below ? 320 : 680;
    const am::svg::Drawing d = am::svg::draw(p), db = am::svg::draw(b);
    CHECK(labels_whole(d, labels));  // every character kept, in order: no two entries read the same
    CHECK(labels_whole(db, {labels[4], labels[5], labels[6]}));
    for (const auto *t : legend_texts(d)) CHECK(t->y <= d.height);
#if AM_REPORT_CAIRO
    std::string why;
    CHECK_MESSAGE(inside_canvas(d, &why), why);
    CHECK_MESSAGE(inside_canvas(db, &why), why);
#endif
  }
  // A legend of short labels is drawn as before: one line each, the canvas no taller.
  am::svg::LinePlot q;
  for (int i = 0; i < 3; ++i) q.series.push_back({"s" + std::to_string(i), {1, 2}, {1, 2}, {}, "", true, true, false});
  const am::svg::Drawing dq = am::svg::draw(q);
  CHECK(legend_texts(dq).size() == 3);
  CHECK(dq.height == q.height);
}
