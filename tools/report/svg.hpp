// A small self-contained SVG plot writer for the attnmech report library: line plots (linear or log axes, error
// bars, horizontal reference lines, legend), heat maps (diverging or sequential colour scale, labelled
// axes, colour bar) and grouped bar charts. Output is a plain SVG 1.1 document as a string.
#ifndef ATTNMECH_REPORT_SVG_HPP
#define ATTNMECH_REPORT_SVG_HPP

#include <string>
#include <utility>
#include <vector>

namespace am::svg {

// A colour from the plot palette (cycles).
std::string palette(size_t i);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> yerr;   // optional: symmetric error bars (same length as y)
  std::string color;          // "" = palette
  bool line = true;
  bool points = true;
  bool dashed = false;
};

struct HLine {
  double y = 0;
  std::string label;
  std::string color;          // "" = palette
  bool dashed = true;
};

struct LinePlot {
  std::string title, xlabel, ylabel;
  bool logx = false, logy = false;
  std::vector<Series> series;
  std::vector<HLine> hlines;
  double xmin, xmax, ymin, ymax;   // NaN = automatic
  int width = 680, height = 440;
  LinePlot();
};

struct HeatMap {
  std::string title, xlabel, ylabel;
  size_t rows = 0, cols = 0;
  std::vector<double> values;     // row-major: values[i*cols + j] is row i, column j
  std::vector<std::string> row_labels, col_labels;   // optional (empty = indices)
  bool diverging = true;          // symmetric scale around 0 (blue–white–red); else sequential
  bool annotate = true;           // print values in cells when the matrix is small (≤ 10×10)
  int size = 480;                 // side of the square plot area in px
  double vmax;                    // diverging scale: colour limit ±vmax (NaN = max |value|)
  double clip_quantile;           // in (0, 1): the colour scale ends at this quantile of the values (|values| when
                                  // diverging), larger ones take the end colour; NaN = the full range
  bool upper_only = false;        // cells below the diagonal left blank (a symmetric matrix with marks below)
  std::vector<std::pair<size_t, size_t>> marks;  // (row, column) cells drawn over with a ring
  std::string mark_label;         // the marks' legend, above the map
  HeatMap();
};

struct BarGroup {
  std::string name;
  std::vector<double> values;     // one per category
  std::string color;
  std::vector<double> errors;     // optional: symmetric error bars (same length as values)
};

struct BarChart {
  std::string title, xlabel, ylabel;
  std::vector<std::string> categories;
  std::vector<BarGroup> groups;
  double ymin, ymax;              // NaN = automatic (from 0)
  int width = 720, height = 420;
  BarChart();
};

std::string render(const LinePlot &p);
std::string render(const HeatMap &h);
std::string render(const BarChart &b);

// Place rendered SVG documents side by side (left to right) in one document.
std::string hstack(const std::vector<std::string> &docs);

// Escape text for SVG/XML.
std::string escape(const std::string &s);
// Tick positions for an axis range (nice numbers; decades and 2/5 multiples on log axes).
std::vector<double> ticks(double lo, double hi, bool log);
std::string format_tick(double v);

// Write `content` to `path`; false on failure.
bool write_file(const std::string &path, const std::string &content);

}  // namespace am::svg

#endif
