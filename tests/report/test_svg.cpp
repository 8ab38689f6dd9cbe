// Unit tests of the tools' SVG writer (tools/svg.hpp): ticks, escaping, axis mapping, heat-map orientation.
#include <doctest/doctest.h>

#include "svg.hpp"

#include <string>
#include <tuple>
#include <vector>

namespace {

// Value of attribute `attr` of every element whose text starts with `tag` (e.g. "<circle", "<svg ").
std::vector<std::string> attrs(const std::string &doc, const std::string &tag, const std::string &attr) {
  std::vector<std::string> out;
  for (size_t p = doc.find(tag); p != std::string::npos; p = doc.find(tag, p + 1)) {
    size_t end = doc.find('>', p);
    size_t a = doc.find(" " + attr + "=\"", p);
    if (a == std::string::npos || a > end) continue;
    a += attr.size() + 3;
    out.push_back(doc.substr(a, doc.find('"', a) - a));
  }
  return out;
}

}  // namespace

TEST_CASE("svg: nice ticks on linear and log axes") {
  auto t = am::svg::ticks(0, 1, false);
  REQUIRE(t.size() == 6);
  for (size_t i = 0; i < t.size(); ++i) CHECK(t[i] == doctest::Approx(0.2 * i).epsilon(1e-12));  // step 0.2
  t = am::svg::ticks(-3, 7, false);  // span 10 → step 2
  CHECK(t == std::vector<double>{-2, 0, 2, 4, 6});
  t = am::svg::ticks(10, 1000, true);  // two decades → 1, 2, 5 multiples
  CHECK(t == std::vector<double>{10, 20, 50, 100, 200, 500, 1000});
  t = am::svg::ticks(1e-4, 1e4, true);  // eight decades → decades only
  CHECK(t.size() == 9);
  CHECK(am::svg::format_tick(0.30000000000000004) == "0.3");
  CHECK(am::svg::format_tick(-1e-15) == "0");
  CHECK(am::svg::format_tick(1000) == "1000");
}

TEST_CASE("svg: text is escaped") {
  CHECK(am::svg::escape("a<b & \"c\">") == "a&lt;b &amp; &quot;c&quot;&gt;");
  am::svg::LinePlot p;
  p.title = "x < y & z";
  std::string doc = am::svg::render(p);
  CHECK(doc.find("x &lt; y &amp; z") != std::string::npos);
  CHECK(doc.find("x < y") == std::string::npos);
}

TEST_CASE("svg: log-x axis puts 100 halfway between 10 and 1000") {
  am::svg::LinePlot p;
  p.logx = true;
  p.xmin = 10;
  p.xmax = 1000;
  p.ymin = 0;
  p.ymax = 1;
  am::svg::Series s;
  s.x = {10, 100, 1000};
  s.y = {0, 0.5, 1};
  p.series.push_back(s);
  std::string doc = am::svg::render(p);
  auto cx = attrs(doc, "<circle", "cx");
  auto cy = attrs(doc, "<circle", "cy");
  REQUIRE(cx.size() == 3);
  double a = std::stod(cx[0]), b = std::stod(cx[1]), c = std::stod(cx[2]);
  CHECK(b - a == doctest::Approx(c - b).epsilon(1e-3));  // pixel rounding 0.01 px
  CHECK(a < c);
  double ya = std::stod(cy[0]), yb = std::stod(cy[1]), yc = std::stod(cy[2]);
  CHECK(ya > yc);  // y grows upwards
  CHECK(yb == doctest::Approx((ya + yc) / 2).epsilon(1e-3));
}

TEST_CASE("svg: heat map rows top to bottom, columns left to right, diverging around 0") {
  am::svg::HeatMap h;
  h.rows = 2;
  h.cols = 3;
  h.values = {-2, 0, 1,   // row 0
              0.5, 0, 2};  // row 1
  h.row_labels = {"r0", "r1"};
  h.col_labels = {"c0", "c1", "c2"};
  std::string doc = am::svg::render(h);
  // Cell rectangles in row-major order (fill colours in hex; the background is fill="white").
  std::vector<std::tuple<double, double, std::string>> cells;
  auto xs = attrs(doc, "<rect", "x"), ys = attrs(doc, "<rect", "y"), fills = attrs(doc, "<rect", "fill");
  REQUIRE(xs.size() == fills.size());
  REQUIRE(ys.size() == fills.size());
  for (size_t i = 0; i < fills.size(); ++i)
    if (fills[i].size() == 7 && fills[i][0] == '#') cells.emplace_back(std::stod(xs[i]), std::stod(ys[i]), fills[i]);
  REQUIRE(cells.size() >= 6);
  // The background is fill="white" (not matched); cells come first in row-major order: (0,0), (0,1), ...
  CHECK(std::get<2>(cells[0]) == "#3b4cc0");  // -2 = -max → full blue
  CHECK(std::get<2>(cells[5]) == "#b40426");  // +2 = +max → full red
  CHECK(std::get<2>(cells[1]) == "#f7f7f7");  // 0 → white
  CHECK(std::get<0>(cells[1]) > std::get<0>(cells[0]));  // column 1 right of column 0
  CHECK(std::get<1>(cells[3]) > std::get<1>(cells[0]));  // row 1 below row 0
  CHECK(std::get<0>(cells[3]) == std::get<0>(cells[0]));
  CHECK(doc.find(">r1</text>") != std::string::npos);
  CHECK(doc.find(">c2</text>") != std::string::npos);
}

TEST_CASE("svg: grouped bars and side-by-side documents") {
  am::svg::BarChart b;
  b.categories = {"1", "2"};
  b.groups = {{"GP", {0.5, 0.25}, "#111111"}, {"RN", {1.0, 0.0}, "#222222"}};
  std::string doc = am::svg::render(b);
  CHECK(doc.find(">GP</text>") != std::string::npos);
  CHECK(doc.find(">RN</text>") != std::string::npos);
  am::svg::HeatMap h;
  h.rows = h.cols = 1;
  h.values = {1};
  std::string one = am::svg::render(h);
  std::string two = am::svg::hstack({one, one});
  auto widths = attrs(one, "<svg ", "width");
  auto w2 = attrs(two, "<svg ", "width");
  REQUIRE(widths.size() == 1);
  REQUIRE(w2.size() == 3);  // outer + two nested
  CHECK(std::stoi(w2[0]) == 2 * std::stoi(widths[0]));
}
