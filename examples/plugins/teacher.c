/* teacher.c — a task plugin in C99 (docs/writing-a-plugin.md). Sequences of Gaussian tokens; the label is the
 * sign of a linear teacher on the mean token; one layer with a similarity head (x_sᵀ x_t · beta) and a uniform head.
 * Build against an installed attnmech (see the guide):
 *   cc -std=c99 -shared -fPIC $(pkg-config --cflags attnmech) teacher.c -o am-teacher.so $(pkg-config --libs attnmech) */
#include <attnmech/attnmech.h>

#include <math.h>
#include <stdlib.h>

static const am_param_def params[] = {
    AM_PARAM("P", AM_PARAM_INT, "200", "training sequences", 2, 1e6, NULL),
    AM_PARAM("P_test", AM_PARAM_INT, "400", "test sequences", 1, 1e6, NULL),
    AM_PARAM("tokens", AM_PARAM_INT, "6", "tokens per sequence", 2, 1000, NULL),
    AM_PARAM("dim", AM_PARAM_INT, "12", "token dimension N0", 2, 1000, NULL),
    AM_PARAM("beta", AM_PARAM_REAL, "0.5", "inverse temperature of the similarity head", 0, 100, NULL),
};

static double num(const am_host *h, const char *key) {
  double v = 0;
  am_record_get_number(h->params, key, &v);
  return v;
}

/* The science: P sequences of S tokens in N0 dimensions, labels from the teacher w = e_1 on the mean token. */
static am_status split(const am_host *h, am_rng *rng, am_record *ds, const char *xkey, const char *ykey, size_t P) {
  const size_t S = (size_t)num(h, "tokens"), N0 = (size_t)num(h, "dim");
  double *X = malloc(P * S * N0 * sizeof *X), *y = malloc(P * sizeof *y);
  am_status st = X && y ? AM_OK : AM_ERR_NO_MEMORY;
  for (size_t mu = 0; st == AM_OK && mu < P; ++mu) {
    double m = 0;
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i) {
        const double x = am_rng_normal(rng);
        X[(mu * S + s) * N0 + i] = x; /* C order [P, S, N0] */
        if (i == 0) m += x;
      }
    y[mu] = m >= 0 ? 1.0 : -1.0;
  }
  am_array_view v = {AM_F64, 3, {P, S, N0}, 0, X};
  if (st == AM_OK) st = am_record_set_array(ds, xkey, &v);
  if (st == AM_OK) st = am_record_set_vector(ds, ykey, y, P);
  free(X);
  free(y);
  return st;
}

static am_status make_dataset(void *inst, am_record *ds, am_record *extras) {
  const am_host *h = inst;
  const size_t N0 = (size_t)num(h, "dim");
  am_rng rng;
  am_host_rng(h, &rng);
  am_status st = split(h, &rng, ds, "X_train", "y_train", (size_t)num(h, "P"));
  if (st == AM_OK) st = split(h, &rng, ds, "X_test", "y_test", (size_t)num(h, "P_test"));
  double *W = calloc(N0 * N0, sizeof *W);
  if (!W) return AM_ERR_NO_MEMORY;
  for (size_t i = 0; i < N0; ++i) W[i * N0 + i] = num(h, "beta");
  am_array_view wv = {AM_F64, 2, {N0, N0}, 0, W}, uv = wv;
  double *zero = calloc(N0 * N0, sizeof *zero);
  uv.data = zero;
  am_record *att = am_record_object(ds, "attention");
  if (st == AM_OK && (!att || !zero)) st = AM_ERR_NO_MEMORY;
  if (st == AM_OK) st = am_record_set_array(att, "l1_h1", &wv);
  if (st == AM_OK) st = am_record_set_array(att, "l1_h2", &uv);
  free(W);
  free(zero);
  const double heads[] = {2}, widths[] = {10, 10}, variances[] = {1, 1, 1}, scan[] = {10, 100, 1000};
  if (st == AM_OK) st = am_record_set_string(ds, "kind", AM_DATASET_ATTENTION);
  if (st == AM_OK) st = am_record_set_vector(ds, "heads", heads, 1);
  if (st == AM_OK) st = am_record_set_vector(ds, "widths", widths, 2);
  if (st == AM_OK) st = am_record_set_vector(ds, "variances", variances, 3);
  if (st == AM_OK) st = am_record_set_vector(ds, "widths_scan", scan, 3);
  if (st == AM_OK) st = am_record_set_number(ds, "temperature", 0.01);
  if (st == AM_OK) st = am_record_set_string(ds, "readout", "mean");
  if (st == AM_OK) st = am_record_set_string(extras, "teacher", "w = e_1 on the mean token");
  return st == AM_OK ? AM_OK : am_context_fail(h->ctx, st, "teacher: %s", am_record_last_error(ds));
}

/* Ceremony: instance = the host itself; the descriptor; the one exported symbol. */
static am_status create(const am_host *host, void **inst) {
  *inst = (void *)host;
  return AM_OK;
}
static void destroy(void *inst) { (void)inst; }

static const am_plugin_desc desc = {
    AM_ABI_VERSION, sizeof(am_plugin_desc), AM_PLUGIN_TASK, "teacher", "1.0",
    "Gaussian tokens, linear teacher on the mean token, similarity + uniform heads",
    params, sizeof params / sizeof params[0], AM_DATA_ATTENTION, "theory",
    create, destroy, make_dataset, NULL, NULL};

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &desc; }
