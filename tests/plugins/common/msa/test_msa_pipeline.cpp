// The alignment pipeline in one call (pipeline.hpp: run_msa) against the host's run of the same file: the task msa
// and the estimator pseudolikelihood through the run API (the build tree's plugins, AM_PLUGIN_PATH) give the run
// record run_msa gives from the host's streams, bit for bit; and an error of the task's half comes back as a status.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/registry.h>
#include <attnmech/run.h>

#include <cstring>
#include <string>
#include <vector>

#include "../../../handles.hpp"
#include "msa_test_util.hpp"
#include "pipeline.hpp"

using am_test::Ctx;
using am_test::Rec;
using msa_test::fixture;

namespace {

std::vector<double> numbers(const am_record *obj, const char *key) {
  am_array_view v{};
  REQUIRE(am_record_array(am_record_get(obj, key), &v) == AM_OK);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  return out;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("msa pipeline: run_msa gives the host's run of the task msa and the estimator pseudolikelihood, bit for bit") {
  Ctx ctx;
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE(am_registry_discover(nullptr, reg, nullptr) == AM_OK);
  am_run_spec *spec = nullptr;
  REQUIRE(am_run_spec_create(&spec) == AM_OK);
  const std::string file = fixture("focus.a2m");
  am_run_spec_set_task(spec, "msa");
  am_run_spec_set(spec, "file", file.c_str());
  am_run_spec_set(spec, "focus", "FOC_HUMAN");
  am_record *doc = nullptr;
  REQUIRE_MESSAGE(am_run_execute(ctx.c, reg, spec, &doc) == AM_OK, ctx.err());
  am_run_spec_destroy(&spec);
  am_registry_destroy(&reg);
  const am_record *host_run = am_record_at(am_record_get(doc, "runs"), 0);

  am::msa::Options task;  // the task's defaults, the file and focus as above
  task.file = file;
  task.focus = "FOC_HUMAN";
  am::potts::PLOptions o;  // the estimator's defaults on an alignment
  o.heads = am::msa::kAlignmentHeads;
  o.init_scale = am::msa::kAlignmentInitScale;
  am_rng task_rng, fit_rng;  // the host's streams at seed 0: the task's 1, the estimator's 2
  am_rng_init(&task_rng, 0, 1);
  am_rng_init(&fit_rng, 0, 2);
  Rec ds, ex, run;
  REQUIRE_MESSAGE(am::msa::run_msa(ctx.c, task, o, am::msa::FitOptions{}, task_rng, fit_rng, am::sdk::serial_loop(),
                                   ds.r, ex.r, run.r) == AM_OK,
                  ctx.err());
  CHECK(am::msa::is_alignment(ds.r));
  CHECK(am::msa::is_alignment_fit(run.r));
  CHECK(am::msa::is_alignment_fit(host_run));
  CHECK(same_bits(numbers(run.r, "scores"), numbers(host_run, "scores")));
  CHECK(same_bits(numbers(am_record_get(run.r, "params"), "J"), numbers(am_record_get(host_run, "params"), "J")));
  double a = 0, b = 1;
  am_record_get_number(run.r, "objective", &a);
  am_record_get_number(host_run, "objective", &b);
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
  am_record_destroy(&doc);
}

TEST_CASE("msa pipeline: an error of the task's half is a status with its message") {
  Ctx ctx;
  am::msa::Options task;
  task.file = fixture("no-such-file.a2m");
  am_rng rng;
  am_rng_init(&rng, 0, 1);
  Rec ds, ex, run;
  const am_status st = am::msa::run_msa(ctx.c, task, am::potts::PLOptions{}, am::msa::FitOptions{}, rng, rng,
                                        am::sdk::serial_loop(), ds.r, ex.r, run.r);
  CHECK(st < 0);
  CHECK(ctx.err().find("no-such-file.a2m") != std::string::npos);
  CHECK(am_record_size(run.r) == 0);
}
