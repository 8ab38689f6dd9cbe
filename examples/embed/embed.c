/* embed.c — attnmech embedded in a C99 program (docs/embedding.md): one run through the run API, written
 * with the report library, exactly as `attnmech run NAME --set k=v ... --out DIR` would write it.
 *   usage: embed DIR NAME [--estimator E] [key=value ...]
 * Build against an installed attnmech:
 *   cc -std=c99 embed.c -o embed $(pkg-config --cflags --libs attnmech-report) */
#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <stdio.h>
#include <string.h>

static void log_line(void *user, am_log_level level, const char *message) {
  (void)user;
  if (level >= AM_LOG_INFO) fprintf(stderr, "%s\n", message);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DIR NAME [--estimator E] [key=value ...]\n", argv[0]);
    return 2;
  }
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.log = log_line;
  am_context *ctx = NULL;
  am_registry *reg = NULL;
  am_run_spec *spec = NULL;
  am_record *results = NULL;
  if (am_context_create(&ctx, &cs) != AM_OK || am_registry_create(&reg) != AM_OK || am_run_spec_create(&spec) != AM_OK)
    return 1;
  am_registry_discover(ctx, reg, NULL); /* AM_PLUGIN_PATH, then the plugins installed beside the library */
  am_run_spec_set_task(spec, argv[2]);
  for (int i = 3; i < argc; ++i) {
    char key[128];
    const char *eq = strchr(argv[i], '=');
    if (strcmp(argv[i], "--estimator") == 0 && i + 1 < argc) {
      am_run_spec_set_estimator(spec, argv[++i]);
    } else if (eq && (size_t)(eq - argv[i]) < sizeof key) {
      memcpy(key, argv[i], (size_t)(eq - argv[i]));
      key[eq - argv[i]] = '\0';
      am_run_spec_set(spec, key, eq + 1);
    }
  }
  am_status st = am_run_execute(ctx, reg, spec, &results);
  int code = 0;
  if (results) {
    if (am_report_write(ctx, results, argv[1], NULL) != AM_OK) {
      fprintf(stderr, "embed: %s\n", am_context_last_error(ctx));
      code = 1;
    }
    char *summary = NULL;
    if (am_report_summary(ctx, results, &summary) == AM_OK) fputs(summary, stdout);
    am_free(summary);
  }
  if (st < 0) {
    fprintf(stderr, "embed: %s (%s)\n", am_context_last_error(ctx), am_status_string(st));
    code = 1;
  }
  am_record_destroy(&results);
  am_run_spec_destroy(&spec);
  am_registry_destroy(&reg);
  am_context_destroy(&ctx);
  return code;
}
