// attnmech — estimator plugin "meanfield": mean-field DCA, the cheap baseline of the alignment fit (docs/msa.md,
// "The mean-field baseline"). Its parameter table bound to am::meanfield::Options; the work is in estimate.cpp and
// meanfield.cpp.
#include <attnmech/plugin.hpp>

#include "estimate.h"

namespace {

using Opt = am::meanfield::Options;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::pseudocount>(
        "pseudocount", "0.5",
        "lambda: the fraction of uniform pseudo-data mixed into the weighted frequencies, f~ = (1 - lambda) f + "
        "lambda/C (pairs lambda/C^2); 0.5 = as many pseudo-sequences as Neff (Morcos et al. 2011, EVcouplings' "
        "pseudo_count); 0 makes the correlation matrix singular for a state never seen at a site",
        0, 0.999),
    param<&Opt::held_out>("held_out", "include",
                          "the task's held-out rows (test_fraction): include = counted with the training rows "
                          "(every row, as plmc and EVcouplings count them; mean-field DCA has no test loss); "
                          "exclude = the training rows only",
                          0, -1, "include|exclude"),
    param<&Opt::params>("params", "1",
                        "write the fields h [L, C] and couplings J [L, L, C, C] (gauge: 0 on the reference state) "
                        "as .npy files; J takes 8*L^2*C^2 bytes (89 MB at L = 159, C = 21)",
                        0, 1),
};

struct Estimator {
  am::sdk::Host host;
  Opt opt;
  Estimator(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {}

  am_status estimate(const am_record *dataset, am_record *run) {
    return am::meanfield::estimate(host.ctx(), opt, dataset, host.loop(), run);
  }

  static am_status describe(const am_record *results, am_record *report) {
    try {
      return am::meanfield::describe(results, report);
    } catch (...) {
      throw am::sdk::Error(AM_ERR_NO_MEMORY, "meanfield: cannot describe the results");
    }
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Estimator, kParams>(
    "meanfield", "1.0.0",
    "mean-field DCA (Morcos et al. 2011): couplings from the Cholesky inverse of the regularised correlation "
    "matrix, APC-corrected Frobenius scores, plmc's couplings file; the fast baseline for alignments",
    AM_DATA_SEQUENCE);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
