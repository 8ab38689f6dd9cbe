// attnmech — task plugin "markov": the parameter table bound to am::markov::Options and the task class (C++ SDK,
// attnmech/plugin.hpp); the logic is in markov_core.
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include "markov_core.h"

namespace {

using Opt = am::markov::Options;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::P>("P", "100", "training sequences (first half label +1: stay probability stay_prob_pos)", 2, 1e9),
    param<&Opt::P_test>("P_test", "1000", "test sequences (first half label +1); 0 = no test split", 0, 1e9),
    param<&Opt::seq_len>("seq_len", "30", "tokens per sequence T_seq (a BOS token is prepended: S = seq_len+1)", 1,
                         1e5),
    param<&Opt::feature_dim>("feature_dim", "200",
                             "N_f, feature dimension of the emissions (even); N0 = N_f + seq_len + 1 (one-hot "
                             "positions)",
                             2, 1e6),
    param<&Opt::stay_pos>("stay_prob_pos", "0.7", "stay probability of the hidden chain in class +1", 0, 1),
    param<&Opt::stay_neg>("stay_prob_neg", "0.3", "stay probability of the hidden chain in class -1", 0, 1),
    param<&Opt::temperature>("temperature", "0.01", "Bayesian temperature T (likelihood noise variance)", 1e-12,
                             1e12),
    param<&Opt::noise_inplane_sum>("noise_inplane_sum", "1",
                                   "noise std along u_par = (v+ + v-)/|.| (in the plane of the emissions; reference "
                                   "code's \"parallel\")",
                                   0, 1e6),
    param<&Opt::noise_inplane_diff>("noise_inplane_diff", "1",
                                    "noise std along u_perp = (v+ - v-)/|.| (in the plane; reference code's "
                                    "\"perpendicular\", NOT the paper's perpendicular noise)",
                                    0, 1e6),
    param<&Opt::noise_out_of_plane>("noise_out_of_plane", "-1",
                                    "noise std orthogonal to the plane of v+, v- = the PAPER's \"perpendicular "
                                    "noise\"; -1 = auto: 5 for config=2paths, else 1",
                                    -1, 1e6),
    param<&Opt::beta_heads>("beta_heads", "10", "inverse temperature beta multiplying every hand-built head", 0, 1e6),
    param<&Opt::p_random>("p_random", "1", "perturbation strength p of the random heads (0 = uniform attention)", 0,
                          1e6),
    // the choices in the order of am::markov::Config
    param<&Opt::config>("config", "all",
                        "heads: all = [same_token, random] x [uniform, random] (paths g, a1, d, a2); good = "
                        "[same_token] x [uniform]; good_denoising = [same_token, random] x [uniform]; 2paths = "
                        "[same_token, blank] x [uniform] with out-of-plane noise 5",
                        0, -1, "all|good|good_denoising|2paths"),
    param<&Opt::widths_scan>("widths_scan", "10,30,50,100,300,500,1000",
                             "widths N to scan (all widths equal N); the dataset's own widths use the first", 1, 1e12)
        .as(AM_PARAM_INT_LIST),
    param<&Opt::variances>("variances", "1,1,1,1", "prior variances s_0, s_1, s_2, s_a", 1e-12, 1e12),
};

struct Markov : am::spec::DescribeTaskExtras {  // the report lists the extras
  am::sdk::Host host;
  Opt opt;
  Markov(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {
    am::sdk::check_context(h.ctx(), am::markov::validate(h.ctx(), opt));
    // The host key `widths` (plugin.h): its length is known from the config, before any data is made.
    size_t n = 0;
    const size_t want = am::markov::network_for(opt.config).layers.size() + 1;
    if (am_record_get_vector(h.params(), "widths", nullptr, 0, &n) == AM_OK && n != want)
      am::sdk::check_context(h.ctx(), am_context_fail(h.ctx(), AM_ERR_USAGE,
                                                      "bad value for widths: config=%s has %zu layers, so widths "
                                                      "needs %zu numbers W0,...,WL, got %zu",
                                                      am::markov::config_name(opt.config), want - 1, want, n));
  }
  am_status make_dataset(am_record *dataset, am_record *extras) {
    return am::markov::make_dataset(host.ctx(), opt, host.rng(), dataset, extras);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::task<Markov, kParams>(
    "markov", "1.0.0", "hidden Markov chain classification with hand-built heads (docs/tasks.md)",
    AM_DATA_ATTENTION, "theory");

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
