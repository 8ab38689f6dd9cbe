// Every bad input of the npy task is a clear error naming the file.
#include <doctest/doctest.h>

#include "npy_test_util.h"

using namespace npy_test;

namespace {

// Loads `dir`, expects `code`, and that the message mentions every string of `needles`.
void expect_error(const TempDir &dir, am_status code, std::initializer_list<const char *> needles) {
  Ctx ctx;
  Rec ds;
  const am_status st = am::npy_task::load_problem(ctx, dir.path.string().c_str(), ds, nullptr);
  const std::string msg = ctx.err();
  CAPTURE(msg);
  CHECK(st == code);
  for (const char *n : needles) CHECK_MESSAGE(msg.find(n) != std::string::npos, "message lacks '" << n << "'");
}

}  // namespace

TEST_CASE("npy errors: no directory given / not a directory") {
  Ctx ctx;
  Rec ds;
  CHECK(am::npy_task::load_problem(ctx, "", ds, nullptr) == AM_ERR_USAGE);
  CHECK(ctx.err().find("'dir' is required") != std::string::npos);
  CHECK(am::npy_task::load_problem(ctx, "/nonexistent/attnmech-npy", ds, nullptr) == AM_ERR_IO);
  CHECK(ctx.err().find("/nonexistent/attnmech-npy") != std::string::npos);
}

TEST_CASE("npy errors: missing files") {
  {
    TempDir d("miss-y");
    write_toy(d.path);
    fs::remove(d.path / "y_train.npy");
    expect_error(d, AM_ERR_IO, {"y_train.npy", "missing"});
  }
  {
    TempDir d("miss-model");
    write_toy(d.path);
    fs::remove(d.path / "model.json");
    expect_error(d, AM_ERR_IO, {"model.json"});
  }
  {
    TempDir d("miss-head");
    write_toy(d.path);
    fs::remove(d.path / "W_l2_h2.npy");
    expect_error(d, AM_ERR_IO, {"l2_h2", "W_l2_h2.npy", "Q_l2_h2.npy", "K_l2_h2.npy"});
  }
  {
    TempDir d("miss-ytest");
    write_toy(d.path);
    fs::remove(d.path / "y_test.npy");
    expect_error(d, AM_ERR_IO, {"y_test.npy"});
  }
  {
    TempDir d("miss-k");
    write_toy(d.path);
    fs::remove(d.path / "W_l1_h2.npy");
    write_npy(d.path / "Q_l1_h2.npy", {3, kN0}, std::vector<double>(3 * kN0, 0.1));
    expect_error(d, AM_ERR_IO, {"K_l1_h2.npy"});
  }
}

TEST_CASE("npy errors: a directory or FIFO under a file's name is named as such, not 'missing'") {
  {
    TempDir d("dir-as-x");
    write_toy(d.path);
    fs::remove(d.path / "X_train.npy");
    fs::create_directory(d.path / "X_train.npy");
    expect_error(d, AM_ERR_FORMAT, {"X_train.npy", "is a directory"});
  }
  {
    TempDir d("dir-as-ytest");  // present as a directory: not "comes together" with X_test
    write_toy(d.path);
    fs::remove(d.path / "y_test.npy");
    fs::create_directory(d.path / "y_test.npy");
    expect_error(d, AM_ERR_FORMAT, {"y_test.npy", "is a directory"});
  }
  {
    TempDir d("zero-as-head");
    write_toy(d.path);
    fs::remove(d.path / "W_l1_h1.npy");
    fs::create_symlink("/dev/zero", d.path / "W_l1_h1.npy");
    expect_error(d, AM_ERR_FORMAT, {"W_l1_h1.npy", "is a character device"});
  }
  {
    TempDir d("dir-as-model");
    write_toy(d.path);
    fs::remove(d.path / "model.json");
    fs::create_directory(d.path / "model.json");
    expect_error(d, AM_ERR_FORMAT, {"model.json", "is a directory, not a file"});
  }
}

TEST_CASE("npy errors: wrong shapes name the file, the actual and the expected shape") {
  {
    TempDir d("shape-w");
    write_toy(d.path);
    write_npy(d.path / "W_l1_h2.npy", {kN0, 4}, std::vector<double>(kN0 * 4, 0.0));
    expect_error(d, AM_ERR_SHAPE, {"W_l1_h2.npy", "[5, 4]", "[5, 5]"});
  }
  {
    TempDir d("shape-x");
    write_toy(d.path);
    write_npy(d.path / "X_train.npy", {kP, kS * kN0}, std::vector<double>(kP * kS * kN0, 0.0));
    expect_error(d, AM_ERR_SHAPE, {"X_train.npy", "[8, 20]", "[P, S, N0]"});
  }
  {
    TempDir d("shape-xt");
    write_toy(d.path);
    write_npy(d.path / "X_test.npy", {2, kS, 6}, std::vector<double>(2 * kS * 6, 0.0));
    expect_error(d, AM_ERR_SHAPE, {"X_test.npy", "[2, 4, 6]", "[P_test, 4, 5]"});
  }
  {
    TempDir d("shape-qk");
    write_toy(d.path);
    fs::remove(d.path / "W_l2_h1.npy");
    write_npy(d.path / "Q_l2_h1.npy", {3, kN0}, std::vector<double>(3 * kN0, 0.1));
    write_npy(d.path / "K_l2_h1.npy", {2, kN0}, std::vector<double>(2 * kN0, 0.1));
    expect_error(d, AM_ERR_SHAPE, {"K_l2_h1.npy", "[2, 5]", "[3, 5]"});
  }
}

TEST_CASE("npy errors: non-finite values") {
  TempDir d("nan");
  write_toy(d.path);
  std::vector<double> W(kN0 * kN0, 0.0);
  W[2 * kN0 + 3] = std::nan("");
  write_npy(d.path / "W_l1_h1.npy", {kN0, kN0}, W);
  expect_error(d, AM_ERR_NONFINITE, {"W_l1_h1.npy", "[2, 3]"});
  TempDir d2("inf");
  write_toy(d2.path);
  write_npy(d2.path / "y_train.npy", {kP}, {1, -1, 1, -1, HUGE_VAL, -1, 1, -1});
  expect_error(d2, AM_ERR_NONFINITE, {"y_train.npy"});
}

// Finite inputs whose products overflow float64: the failure is found where it arises (ξ, the labels' squares)
// and named by the input file (dataset.h `sources`), not reported as a solver symptom.
TEST_CASE("npy errors: finite but overflowing inputs name their file") {
  TempDir d("bigx");
  write_toy(d.path);
  std::vector<double> X(kP * kS * kN0, 0.25);
  X[7] = 1e300;
  write_npy(d.path / "X_train.npy", {kP, kS, kN0}, X);
  Ctx ctx;
  Rec ds;
  REQUIRE(am::npy_task::load_problem(ctx, d.path.string().c_str(), ds, nullptr) == AM_OK);  // finite: readable
  double *xi = nullptr, *y = nullptr;
  size_t P = 0, N0 = 0;
  CHECK(am_dataset_xi(ctx, ds, "train", &xi, &P, &N0, &y) == AM_ERR_NONFINITE);
  CHECK(xi == nullptr);
  std::string msg = ctx.err();
  CAPTURE(msg);
  CHECK(msg.find((d.path / "X_train.npy").string()) != std::string::npos);
  CHECK(msg.find("1e+300") != std::string::npos);

  TempDir d2("bigy");
  write_toy(d2.path);
  write_npy(d2.path / "y_train.npy", {kP}, {1, -1, 1e300, -1e300, 1, -1, 1, -1});
  Rec ds2;
  REQUIRE(am::npy_task::load_problem(ctx, d2.path.string().c_str(), ds2, nullptr) == AM_OK);
  CHECK(am_dataset_xi(ctx, ds2, "train", &xi, &P, &N0, &y) == AM_ERR_NONFINITE);
  msg = ctx.err();
  CHECK(msg.find((d2.path / "y_train.npy").string()) != std::string::npos);
  CHECK(msg.find("squared labels overflows") != std::string::npos);
  CHECK(xi == nullptr);
  // 1e150 squared is 1e300: still finite, accepted
  write_npy(d2.path / "y_train.npy", {kP}, {1, -1, 1e150, -1e150, 1, -1, 1, -1});
  Rec ds3;
  REQUIRE(am::npy_task::load_problem(ctx, d2.path.string().c_str(), ds3, nullptr) == AM_OK);
  REQUIRE(am_dataset_xi(ctx, ds3, "train", &xi, &P, &N0, &y) == AM_OK);
  am_free(xi);
  am_free(y);
}

TEST_CASE("npy errors: label count mismatch") {
  TempDir d("labels");
  write_toy(d.path);
  write_npy(d.path / "y_train.npy", {7}, std::vector<double>(7, 1.0));
  expect_error(d, AM_ERR_SHAPE, {"y_train.npy", "7", "P = 8"});
  TempDir d2("labels-test");
  write_toy(d2.path);
  write_npy(d2.path / "y_test.npy", {3}, std::vector<double>(3, 1.0));
  expect_error(d2, AM_ERR_SHAPE, {"y_test.npy"});
}

TEST_CASE("npy errors: model.json problems") {
  struct Case {
    const char *json;
    const char *needle;
  };
  const Case cases[] = {
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1.0, 0.8, 1.2, 1.5],
          "temperature": 0.1, "form": "softmax"})",
       "unknown \"form\" \"softmax\""},
      {R"({"readout": "middle", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 0.1})",
       "\"readout\""},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4], "variances": [1, 1, 1, 1], "temperature": 0.1})",
       "\"widths\" needs L+1 = 3"},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1], "temperature": 0.1})",
       "\"variances\" needs L+2 = 4"},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 0})",
       "\"temperature\""},
      {R"({"readout": "last", "heads": [2, 1.5], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 1})",
       "\"heads\""},
      {R"({"readout": "last", "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 1})",
       "missing key \"heads\""},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 20.5, 5], "variances": [1, 1, 1, 1], "temperature": 1})",
       "\"widths\" entries must be whole numbers in [1, 1e+12] (found 20.5)"},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 1,
          "widths_scan": [0.5, 10]})",
       "\"widths_scan\" entries must be whole numbers"},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 5e-324})",
       "\"temperature\" must be a number in [1e-12, 1e+12]"},
      {R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5], "variances": [1, 1, 1, 1], "temperature": 1,
          "temperature": 2})",
       "duplicate key \"temperature\""},
      {R"({"readout": "last", "heads": [2, 2], )", "invalid JSON"},
      {R"([1, 2, 3])", "JSON object"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.json);
    TempDir d("model");
    write_toy(d.path);
    write_text(d.path / "model.json", c.json);
    expect_error(d, AM_ERR_FORMAT, {"model.json", c.needle});
  }
}

TEST_CASE("npy errors: both W and Q/K for one head; form contradicting the files") {
  {
    TempDir d("both");
    write_toy(d.path);
    write_npy(d.path / "Q_l1_h1.npy", {2, kN0}, std::vector<double>(2 * kN0, 0.1));
    write_npy(d.path / "K_l1_h1.npy", {2, kN0}, std::vector<double>(2 * kN0, 0.1));
    expect_error(d, AM_ERR_FORMAT, {"W_l1_h1.npy", "Q_l1_h1.npy", "l1_h1"});
  }
  {
    TempDir d("form");
    write_toy(d.path);
    write_text(d.path / "model.json", R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5],
      "variances": [1.0, 0.8, 1.2, 1.5], "temperature": 0.1, "form": "qk"})");
    expect_error(d, AM_ERR_FORMAT, {"\"qk\"", "l1_h1"});
  }
}

TEST_CASE("npy warnings: unknown model.json keys and unused head files are warnings, not errors") {
  TempDir d("warn");
  write_toy(d.path);
  write_text(d.path / "model.json", R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5],
    "variances": [1.0, 0.8, 1.2, 1.5], "temperature": 0.1, "comment": "made by hand", "form": "bilinear"})");
  write_npy(d.path / "W_l3_h1.npy", {kN0, kN0}, std::vector<double>(kN0 * kN0, 0.0));
  Ctx ctx;
  Rec ds;
  REQUIRE_MESSAGE(am::npy_task::load_problem(ctx, d.path.string().c_str(), ds, nullptr) == AM_OK, ctx.err());
  REQUIRE(ctx.warnings.size() == 2);
  CHECK(ctx.warnings[0].find("\"comment\"") != std::string::npos);
  CHECK(ctx.warnings[1].find("W_l3_h1.npy") != std::string::npos);
}
