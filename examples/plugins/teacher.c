/* teacher.c — a task plugin in C99 (docs/writing-a-plugin.md). Sequences of Gaussian tokens; the label is the
 * sign of a linear teacher on the mean token; one layer with a similarity head (logit beta x_sᵀ x_t) and a
 * uniform head. Built out of tree against an installed attnmech, exactly as tests/cli/test_install.sh does:
 *   cc -std=c99 -O2 -shared -fPIC teacher.c -o am-teacher.so $(pkg-config --cflags --libs attnmech-plugin)
 * The science sits between the "science" fences: the data, the network, the plot. Everything else is what
 * any C task writes (the test counts it: at most 40 non-blank, non-comment lines). */
#include <attnmech/attnmech.h>

#include <stdlib.h>

/* science: begin */
/* The parameters of the model (name, type, default, help, range): the CLI's `help teacher` shows them. */
static const am_param_def params[] = {
    AM_PARAM("P", AM_PARAM_INT, "200", "training sequences", 2, 1e6, NULL),
    AM_PARAM("P_test", AM_PARAM_INT, "400", "test sequences", 1, 1e6, NULL),
    AM_PARAM("tokens", AM_PARAM_INT, "6", "tokens per sequence", 2, 1000, NULL),
    AM_PARAM("dim", AM_PARAM_INT, "12", "token dimension N0", 2, 1000, NULL),
    AM_PARAM("beta", AM_PARAM_REAL, "0.5", "inverse temperature of the similarity head", 0, 100, NULL),
};

/* P sequences of S tokens x ~ N(0, 1) in N0 dimensions, stored as `xkey` [P, S, N0] (C order); labels
 * y = sign(w·mean token) with the teacher w = e_1, stored as `ykey`. *plus: the fraction of +1 labels. */
static am_status split(am_rng *rng, am_record *ds, const char *xkey, const char *ykey, size_t P, size_t S,
                       size_t N0, double *X, double *y, double *plus) {
  *plus = 0;
  for (size_t mu = 0; mu < P; ++mu) {
    double m = 0;
    for (size_t i = 0; i < S * N0; ++i) {
      X[mu * S * N0 + i] = am_rng_normal(rng);
      if (i % N0 == 0) m += X[mu * S * N0 + i];
    }
    y[mu] = m >= 0 ? 1.0 : -1.0;
    *plus += (m >= 0) / (double)P;
  }
  const am_array_view v = {AM_F64, 3, {P, S, N0}, 0, X};
  am_status st = am_record_set_array(ds, xkey, &v);
  return st == AM_OK ? am_record_set_vector(ds, ykey, y, P) : st;
}

/* The network: one layer of two heads, similarity (W = beta·1: logit[s,t] = beta x_sᵀ x_t) and uniform
 * (W = 0); unit variances, mean-token readout, temperature 0.01; widths N = 10, 100, 1000 scanned. */
static am_status network(am_record *ds, double beta, size_t N0, double *W) {
  static const double heads[] = {2}, widths[] = {10, 10}, variances[] = {1, 1, 1}, scan[] = {10, 100, 1000};
  am_record *att = am_record_object(ds, "attention");
  for (size_t i = 0; i < N0 * N0; ++i) W[i] = i % (N0 + 1) == 0 ? beta : 0;
  am_status st = am_record_set_matrix(att, "l1_h1", W, N0, N0, N0);
  for (size_t i = 0; i < N0 * N0; ++i) W[i] = 0;
  if (st == AM_OK) st = am_record_set_matrix(att, "l1_h2", W, N0, N0, N0);
  if (st == AM_OK) st = am_record_set_string(ds, "kind", AM_DATASET_ATTENTION);
  if (st == AM_OK) st = am_record_set_vector(ds, "heads", heads, 1);
  if (st == AM_OK) st = am_record_set_vector(ds, "widths", widths, 2);
  if (st == AM_OK) st = am_record_set_vector(ds, "variances", variances, 3);
  if (st == AM_OK) st = am_record_set_vector(ds, "widths_scan", scan, 3);
  if (st == AM_OK) st = am_record_set_number(ds, "temperature", 0.01);
  return st == AM_OK ? am_record_set_string(ds, "readout", "mean") : st;
}

/* The plot (docs/abi.md, report spec): the test accuracy of whatever estimator ran, vs the width, next to
 * the majority-class rate of the test split (a task extra). Rows: object ("plot" or "series"), key, value. */
static const char *const plot_spec[][3] = {
    {"plot", "file", "teacher_accuracy"}, {"plot", "kind", "lines"}, {"plot", "title", "teacher task"},
    {"plot", "x_label", "width N"}, {"plot", "y_label", "test accuracy"},
    {"series", "label", "test accuracy"}, {"", "x", "runs.*.width"}, {"", "y", "runs.*.test.accuracy"},
    {"series", "label", "majority class"}, {"", "y", "task_extras.majority"}, {"", "style", "hline"}};
/* science: end */

static double num(const am_host *h, const char *key) { return am_record_number(am_record_get(h->params, key)); }

static am_status make_dataset(void *inst, am_record *ds, am_record *extras) {
  const am_host *h = inst;
  const size_t P = (size_t)num(h, "P"), Pt = (size_t)num(h, "P_test"), S = (size_t)num(h, "tokens");
  const size_t N0 = (size_t)num(h, "dim"), Pmax = P > Pt ? P : Pt, n = Pmax * S * N0;
  double *X = malloc((n + N0 * N0) * sizeof *X), *y = malloc(Pmax * sizeof *y), plus = 0; /* X: a split, then W */
  am_rng rng;
  am_host_rng(h, &rng);
  am_status st = X && y ? AM_OK : AM_ERR_NO_MEMORY;
  if (st == AM_OK) st = split(&rng, ds, "X_train", "y_train", P, S, N0, X, y, &plus);
  if (st == AM_OK) st = split(&rng, ds, "X_test", "y_test", Pt, S, N0, X, y, &plus);
  if (st == AM_OK) st = network(ds, num(h, "beta"), N0, X + n);
  if (st == AM_OK) st = am_record_set_number(extras, "majority", plus > 0.5 ? plus : 1 - plus);
  free(X);
  free(y);
  return st == AM_OK ? AM_OK : am_context_fail(h->ctx, st, "teacher: %s", am_record_last_error(ds));
}

static am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  am_record *plot = am_record_append_object(am_record_list(report, "plots")), *obj = plot;
  am_status st = am_record_set_bool(plot, "x_log", am_record_size(am_record_get(results, "runs")) > 1);
  for (size_t i = 0; st == AM_OK && i < sizeof plot_spec / sizeof plot_spec[0]; ++i) {
    if (plot_spec[i][0][0] == 's') obj = am_record_append_object(am_record_list(plot, "series"));
    st = am_record_set_string(obj, plot_spec[i][1], plot_spec[i][2]);
  }
  return st == AM_OK ? AM_OK : am_context_fail(ctx, st, "teacher: %s", am_record_last_error(report));
}

static am_status create(const am_host *host, void **inst) {
  *inst = (void *)host; /* the instance is the host: no state of its own */
  return AM_OK;
}
static void destroy(void *inst) { (void)inst; }

static const am_plugin_desc desc = {
    AM_ABI_VERSION, sizeof(am_plugin_desc), AM_PLUGIN_TASK, "teacher", "1.0",
    "Gaussian tokens, linear teacher on the mean token, similarity + uniform heads",
    params, sizeof params / sizeof params[0], AM_DATA_ATTENTION, "theory",
    create, destroy, make_dataset, NULL, describe};

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &desc; }
