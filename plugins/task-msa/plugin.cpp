// attnmech — task plugin "msa": a real multiple sequence alignment (protein, RNA, DNA) as a "sequence" dataset by
// plmc's conventions, marked as an alignment (key `alignment`): the parameter table bound to am::msa::Options; the
// alignment pipeline's first half (make_dataset, plugins/common/msa/dataset.hpp) does the work.
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include "dataset.hpp"

#include <string>

namespace {

using Opt = am::msa::Options;
using am::sdk::param;

#if AM_MSA_ZLIB
#define AM_MSA_GZIP_TEXT "gzip-compressed too"
#else
#define AM_MSA_GZIP_TEXT "gzip not read: built without zlib"
#endif

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::file>("file", "",
                      "the alignment (required): FASTA, A2M, A3M or Stockholm, recognised by content (" AM_MSA_GZIP_TEXT
                      ")",
                      0, -1),
    param<&Opt::focus>("focus", "",
                       "focus mode: the first sequence whose name starts with this id (a warning names the others); "
                       "keeps the columns where it has a residue (protein: an uppercase one) and numbers sites from its "
                       "NAME/START-END",
                       0, -1),
    param<&Opt::alphabet>("alphabet", "protein",
                          "protein (-ACDEFGHIKLMNPQRSTVWY), rna (-ACGU), dna (-ACGT) or your letters (state k = letter "
                          "k); rows with other letters are dropped",
                          0, -1),
    param<&Opt::theta>("theta", "0.2",
                       "sequence weights 1/#neighbours, neighbours sharing >= (1 - theta) of the sites; 0 = no "
                       "weights",
                       0, 1),
    param<&Opt::test_fraction>("test_fraction", "0",
                               "fraction of the rows held out (seeded random choice) for a test loss; 0 = none (every "
                               "row fits, as plmc: the defaults study in docs/msa.md)",
                               0, 0.9),
    param<&Opt::gap_identity>("gap_identity", "plmc",
                              "sequence weights: plmc = a gap matching a gap counts as identity (plmc's rule: a "
                              "gap-dominated alignment can collapse to Neff ~ 1); ignore = columns where both rows "
                              "have a gap are left out (neighbours agree at >= 1 - theta of the other columns)",
                              0, -1, "plmc|ignore"),
    param<&Opt::rf>("rf", "1",
                    "Stockholm: 1 = a #=GC RF line keeps only its match columns (RF '.', '-', '_', '~' mark "
                    "inserts; sites numbered among the match columns, as HMMER); 0 = every column, RF ignored",
                    0, 1),
};

struct Msa : am::spec::DescribeTaskExtras {  // the report lists the extras
  am::sdk::Host host;
  Opt opt;
  Msa(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {
    if (opt.file.empty())
      throw am::sdk::Error(AM_ERR_USAGE, "msa: parameter 'file' is required: the alignment to read (e.g. --set "
                                         "file=family.a2m --set focus=ID)");
    if (opt.alphabet.empty()) opt.alphabet = "protein";
    am::msa::make_alphabet(opt.alphabet);  // a bad alphabet is a usage error before any reading
  }

  am_status make_dataset(am_record *dataset, am_record *extras) {
    const am::sdk::Host &h = host;
    const am::msa::Summary s = am::msa::make_dataset(
        opt, host.rng(), host.loop(), dataset, extras,
        [&h](double done, double total) { return h.progress(done, total, "sequence weights (pairs of rows)"); },
        [&h, this](const std::string &line) { h.log(AM_LOG_INFO, "%s: %s", opt.file.c_str(), line.c_str()); });
    if (s.cancelled) return AM_CANCELLED;
    if (s.M_dropped > 0) log_dropped(s);
    for (const std::string &w : s.warnings) host.log(AM_LOG_WARN, "%s: %s", opt.file.c_str(), w.c_str());
    return AM_OK;  // the warnings are also the dataset's: the alignment fit makes them its run's
  }

  void log_dropped(const am::msa::Summary &s) const {
    std::string eg;
    for (const std::string &e : s.dropped_examples) eg += (eg.empty() ? "" : "; ") + e;
    host.log(AM_LOG_WARN, "%s: dropped %zu of %zu sequences for letters outside the alphabet (e.g. %s)",
             opt.file.c_str(), s.M_dropped, s.M_read, eg.c_str());
  }
};

constexpr am_plugin_desc kDesc = am::sdk::task<Msa, kParams>(
    "msa", "1.0.0",
    "a real protein/RNA/DNA alignment (FASTA, A2M, A3M, Stockholm; " AM_MSA_GZIP_TEXT
    ") with plmc's focus mode and sequence weights",
    AM_DATA_SEQUENCE, "pseudolikelihood");

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
