// results.json and .npy output of the attnmech CLI, and the human-readable summary (docs/results-schema.md).
#ifndef ATTNMECH_TOOLS_RESULTS_HPP
#define ATTNMECH_TOOLS_RESULTS_HPP

#include <attnmech/record.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace amtool {

using json = nlohmann::ordered_json;

// A record as JSON: objects keep key order, arrays become nested lists in row-major (C) order of their
// shape (element [i][j] of a [rows, cols] array is element (i, j)), integral numbers are written as
// integers, non-finite numbers as null.
json record_to_json(am_context *ctx, const am_record *node);

// Write every array of at least `min_elements` elements under `node` as `<dir>/<prefix>.<path>.npy`
// (dotted path of object keys and list indices). Returns false and sets `err` on the first failure.
bool export_npy(am_context *ctx, const am_record *node, const std::string &dir, const std::string &prefix,
                size_t min_elements, std::vector<std::string> *written, std::string *err);

// results.json text: objects one key per line (indent 1), numeric lists on one line, matrices one row a line.
std::string dump_results(const json &doc);

// Human-readable summary of a results document (results.json) on `out`.
void print_summary(std::FILE *out, const json &doc);

// Helpers shared with the plot code.
const json *jpath(const json &j, const std::string &dotted);   // object keys / list indices; nullptr if absent
double jnumber(const json *j);                                 // NaN unless a number/bool
std::vector<double> jvector(const json *j);                     // flattened numbers of a (nested) list
bool jmatrix(const json *j, size_t *rows, size_t *cols, std::vector<double> *rowmajor);
std::vector<std::string> jstrings(const json *j);
bool is_attention_run(const json &run);
double run_width(const json &run);                              // max_l W_l, NaN if absent
std::vector<std::string> path_labels(const json &doc, const json &run);
// Labels "l<layer>_h<k>" of one layer's heads from run.head_labels (empty if absent).
std::vector<std::string> layer_head_labels(const json &run, size_t layer);
// Overlaps of an alignment entry (an array, or an object with "overlaps").
std::vector<double> alignment_overlaps(const json *entry);
std::string solver_status(const json &run);

}  // namespace amtool

#endif
