// The task msa's plugin module through the plugin ABI (plugins/task-msa/plugin.cpp): the descriptor, 'file' required,
// a bad alphabet refused before any reading, the fixture made into a dataset marked as an alignment.
#include <doctest/doctest.h>

#include <attnmech/registry.h>

#include <string>

#include "../../handles.hpp"
#include "../common/msa/msa_test_util.hpp"
#include "dataset.hpp"

using namespace msa_test;
using am_test::Ctx;
using am_test::Rec;

#ifdef AM_MSA_PLUGIN_PATH
// Through the plugin ABI: the descriptor, 'file' required (usage error), then the fixture loads.
TEST_CASE("msa plugin module: descriptor, 'file' required, the fixture through the C entry") {
  Ctx ctx;
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE_MESSAGE(am_registry_load_file(ctx.c, reg, AM_MSA_PLUGIN_PATH) == AM_OK, ctx.err());
  const am_plugin_desc *d = am_registry_find(reg, "msa", AM_PLUGIN_TASK);
  REQUIRE(d);
  CHECK(d->data_kinds == AM_DATA_SEQUENCE);
  CHECK(std::string(d->default_estimator) == "pseudolikelihood");
  am_host host{};
  host.struct_size = sizeof host;
  host.ctx = ctx.c;
  host.seed = 1;
  void *inst = nullptr;
  {
    const char *nk[1] = {nullptr}, *nv[1] = {nullptr};
    int nu[1] = {0};
    Rec params;
    REQUIRE_MESSAGE(am_params_parse(ctx.c, d, 0, nk, nv, nu, params.r) == AM_OK, ctx.err());
    host.params = params.r;
    CHECK(d->create(&host, &inst) == AM_ERR_USAGE);
    CHECK(ctx.err().find("'file' is required") != std::string::npos);
  }
  const std::string file = fixture("focus.a2m");
  const char *keys[] = {"file", "focus", "alphabet"};
  const char *bad[] = {file.c_str(), "FOC", "AAB"};
  int used[3] = {0, 0, 0};
  {
    Rec params;
    REQUIRE_MESSAGE(am_params_parse(ctx.c, d, 3, keys, bad, used, params.r) == AM_OK, ctx.err());
    host.params = params.r;
    CHECK(d->create(&host, &inst) == AM_ERR_USAGE);  // the alphabet is checked before any reading
    CHECK(ctx.err().find("'A' given twice") != std::string::npos);
  }
  const char *vals[] = {file.c_str(), "FOC", "protein"};
  Rec params;
  REQUIRE_MESSAGE(am_params_parse(ctx.c, d, 3, keys, vals, used, params.r) == AM_OK, ctx.err());
  host.params = params.r;
  REQUIRE_MESSAGE(d->create(&host, &inst) == AM_OK, ctx.err());
  Rec ds, ex;
  CHECK_MESSAGE(d->make_dataset(inst, ds.r, ex.r) == AM_OK, ctx.err());
  d->destroy(inst);
  CHECK(am::sdk::get_string(ds.r, "focus_sequence") == "MKVLW");
  CHECK(am::msa::is_alignment(ds.r));
  CHECK(am::sdk::get_number(ex.r, "M") + am::sdk::get_number(ex.r, "M_test") == 4);
  am_registry_destroy(&reg);
}
#endif
