// attnmech — task plugin "markov": descriptor and C callbacks only; the logic is in markov_core.
#include <attnmech/report_spec.hpp>
#include "markov_core.h"

#include <new>

#include "../common/plugin_glue.hpp"


namespace {

constexpr char kName[] = "markov";
using Opt = am_markov::Options;

const am_param_def kParams[] = {
    AM_PARAM("P", AM_PARAM_INT, "100", "training sequences (first half label +1: stay probability stay_prob_pos)", 2, 1e9,
     nullptr),
    AM_PARAM("P_test", AM_PARAM_INT, "1000", "test sequences (first half label +1); 0 = no test split", 0, 1e9, nullptr),
    AM_PARAM("seq_len", AM_PARAM_INT, "30", "tokens per sequence T_seq (a BOS token is prepended: S = seq_len+1)", 1, 1e5,
     nullptr),
    AM_PARAM("feature_dim", AM_PARAM_INT, "200",
     "N_f, feature dimension of the emissions (even); N0 = N_f + seq_len + 1 (one-hot positions)", 2, 1e6, nullptr),
    AM_PARAM("stay_prob_pos", AM_PARAM_REAL, "0.7", "stay probability of the hidden chain in class +1", 0, 1, nullptr),
    AM_PARAM("stay_prob_neg", AM_PARAM_REAL, "0.3", "stay probability of the hidden chain in class -1", 0, 1, nullptr),
    AM_PARAM("temperature", AM_PARAM_REAL, "0.01", "Bayesian temperature T (likelihood noise variance)", 1e-12, 1e12,
     nullptr),
    AM_PARAM("noise_inplane_sum", AM_PARAM_REAL, "1",
     "noise std along u_par = (v+ + v-)/|.| (in the plane of the emissions; reference code's \"parallel\")", 0, 1e6,
     nullptr),
    AM_PARAM("noise_inplane_diff", AM_PARAM_REAL, "1",
     "noise std along u_perp = (v+ - v-)/|.| (in the plane; reference code's \"perpendicular\", NOT the paper's "
     "perpendicular noise)",
     0, 1e6, nullptr),
    AM_PARAM("noise_out_of_plane", AM_PARAM_REAL, "-1",
     "noise std orthogonal to the plane of v+, v- = the PAPER's \"perpendicular noise\"; -1 = auto: 5 for "
     "config=2paths, else 1",
     -1, 1e6, nullptr),
    AM_PARAM("beta_heads", AM_PARAM_REAL, "10", "inverse temperature beta multiplying every hand-built head", 0, 1e6, nullptr),
    AM_PARAM("p_random", AM_PARAM_REAL, "1", "perturbation strength p of the random heads (0 = uniform attention)", 0, 1e6,
     nullptr),
    AM_PARAM("config", AM_PARAM_CHOICE, "all",
     "heads: all = [same_token, random] x [uniform, random] (paths g, a1, d, a2); good = [same_token] x [uniform]; "
     "good_denoising = [same_token, random] x [uniform]; 2paths = [same_token, blank] x [uniform] with "
     "out-of-plane noise 5",
     0, -1, "all|good|good_denoising|2paths"),
    AM_PARAM("widths_scan", AM_PARAM_INT_LIST, "10,30,50,100,300,500,1000",
     "widths N to scan (all widths equal N); the dataset's own widths use the first", 1, 1e12, nullptr),
    AM_PARAM("variances", AM_PARAM_REAL_LIST, "1,1,1,1", "prior variances s_0, s_1, s_2, s_a", 1e-12, 1e12, nullptr),
};

am_status parse(const am_host *h, Opt *o) { return am_markov::options_from_params(h->ctx, h->params, o); }

am_status make_dataset(void *instance, am_record *dataset, am_record *extras) {
  if (!instance) return AM_ERR_INVALID_ARGUMENT;
  const auto *in = am_glue::get<Opt>(instance);
  am_rng rng;
  am_host_rng(in->host, &rng);
  return am_markov::make_dataset(in->host->ctx, in->opt, rng, dataset, extras);
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_TASK,
    "markov",
    "1.0.0",
    "hidden Markov chain classification with hand-built heads (attention-paths spec section 6)",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_ATTENTION,
    "theory",
    am_glue::create<Opt, parse, kName>,
    am_glue::destroy<Opt>,
    make_dataset,
    nullptr,
    am_spec::describe_task_extras,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
