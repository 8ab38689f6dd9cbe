// attnmech fuzzing — a small valid problem directory of the `npy` task (docs/tasks.md) for the two problem
// harnesses: model.json with heads [1, 2] in Q/K form, X_train [4, 3, 2], y_train [4], X_test [2, 3, 2],
// y_test [2], Q/K [G = 2, N0 = 2] per head. Written once per process into the harness's temporary directory.
#ifndef ATTNMECH_FUZZ_PROBLEM_DIR_HPP
#define ATTNMECH_FUZZ_PROBLEM_DIR_HPP

#include "fuzz_util.hpp"

#include <cstring>
#include <vector>

namespace fuzz {

inline const char *problem_model_json() {
  return "{\"readout\": \"mean\", \"heads\": [1, 2], \"widths\": [3, 3, 3], \"variances\": [1, 1, 1, 1],\n"
         " \"temperature\": 0.05, \"form\": \"qk\"}\n";
}

// The .npy files of the directory (name, shape); values are small distinct numbers, labels ±1.
struct ProblemFile {
  const char *name;
  uint32_t ndim;
  size_t shape[3];
};
inline const std::vector<ProblemFile> &problem_files() {
  static const std::vector<ProblemFile> files = {
      {"X_train.npy", 3, {4, 3, 2}}, {"y_train.npy", 1, {4}},      {"X_test.npy", 3, {2, 3, 2}},
      {"y_test.npy", 1, {2}},        {"Q_l1_h1.npy", 2, {2, 2}},   {"K_l1_h1.npy", 2, {2, 2}},
      {"Q_l2_h1.npy", 2, {2, 2}},    {"K_l2_h1.npy", 2, {2, 2}},   {"Q_l2_h2.npy", 2, {2, 2}},
      {"K_l2_h2.npy", 2, {2, 2}},
  };
  return files;
}

// Writes model.json and every .npy file into `dir` (created).
inline void write_problem_dir(const std::filesystem::path &dir) {
  std::filesystem::create_directories(dir);
  const char *m = problem_model_json();
  write_file(dir / "model.json", reinterpret_cast<const uint8_t *>(m), std::strlen(m));
  for (const ProblemFile &f : problem_files()) {
    size_t n = 1;
    for (uint32_t d = 0; d < f.ndim; ++d) n *= f.shape[d];
    std::vector<double> v(n);
    const bool labels = f.name[0] == 'y';
    for (size_t i = 0; i < n; ++i) v[i] = labels ? (i % 2 ? -1.0 : 1.0) : 0.25 * double(i % 7) - 0.5;
    am_array_view view;
    std::memset(&view, 0, sizeof view);
    view.dtype = AM_F64;
    view.ndim = f.ndim;
    for (uint32_t d = 0; d < f.ndim; ++d) view.shape[d] = f.shape[d];
    view.data = v.data();
    if (am_npy_write(context(), (dir / f.name).c_str(), &view) != AM_OK) die(am_context_last_error(context()));
  }
}

}  // namespace fuzz

#endif
