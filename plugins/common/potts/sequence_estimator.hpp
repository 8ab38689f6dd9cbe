// potts_core — the instance behind the estimator plugins "pseudolikelihood" and "vanilla" (header only, on
// the plugin SDK attnmech/plugin.hpp): the host plus the options; estimate() reads the sequence dataset and
// runs the fit; describe() is the report spec of alignment fits (msa_report.hpp) for documents whose runs have
// `scores`, else the sequence-estimator report spec (plugins/common/sequence_report.hpp).
// Each plugin keeps only its parameter table and descriptor.
#ifndef ATTNMECH_POTTS_SEQUENCE_ESTIMATOR_HPP
#define ATTNMECH_POTTS_SEQUENCE_ESTIMATOR_HPP

#include <attnmech/plugin.hpp>

#include <string>

#include "../sequence_report.hpp"
#include "msa_report.hpp"
#include "potts_estimators.h"

namespace am::potts {

// The pseudolikelihood fit runs its loss on the host's parallel loop; other fits (vanilla) have no loop.
inline void use_host_loop(PLOptions &o, const am::sdk::Host &h) { o.parallel = host_parallel_for(h); }
template <class Opt>
inline void use_host_loop(Opt &, const am::sdk::Host &) {}

// Name: the plugin's name (static storage), used in the describe error message.
template <class Opt, am_status (*Fit)(am_context *, const Opt &, const SeqData &, const am_rng &, am_record *),
          const char *Name>
struct SequenceEstimator {
  am::sdk::Host host;
  Opt opt;
  SequenceEstimator(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) { use_host_loop(opt, h); }

  am_status estimate(const am_record *dataset, am_record *run) {
    return fit_dataset(host.ctx(), opt, dataset, host.rng(), run, Fit);
  }

  static am_status describe(const am_record *results, am_record *report) {
    try {
      if (am::msa_report::is_alignment_fit(results)) return am::msa_report::describe(results, report);
      return am::sequence_report::describe(results, report);
    } catch (...) {
      throw am::sdk::Error(AM_ERR_NO_MEMORY, std::string(Name) + ": cannot describe the results");
    }
  }
};

}  // namespace am::potts
#endif
