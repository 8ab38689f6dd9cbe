/* A program linked against libattnmech.so.3 as it was before 3.6 — one library exporting the whole C API — still
 * runs on the two libraries of 3.6 (libattnmech over libattnmech-base). It is linked here against libattnmech-abi,
 * the union of both with the soname libattnmech.so.3 (libcore/meson.build): so its only NEEDED entry is
 * libattnmech.so.3, as in a program built with 3.5, and at run time the loader finds libattnmech.so.3 = the host
 * library in the build tree, and the functions that moved in libattnmech-base, which that library NEEDS. Exit 0 when
 * functions of both rooms answer; the meson test 'old-programs' also checks that NEEDED line (tests/libcore/meson.build). */
#include <attnmech/attnmech.h>

#include <stdio.h>

int main(void) {
  am_context *ctx = NULL;
  am_record *r = NULL;
  am_registry *reg = NULL;
  double x = 0;
  am_rng rng;
  if (am_context_create(&ctx, NULL) != AM_OK || am_record_create(&r) != AM_OK) return 1;   /* base */
  if (am_record_set_number(r, "x", 2.5) != AM_OK || am_record_get_number(r, "x", &x) != AM_OK || x != 2.5) return 2;
  am_rng_init(&rng, 1, 2);
  if (am_registry_create(&reg) != AM_OK) return 3;                                         /* host */
  if (am_registry_find(reg, "no-such-plugin", 0) != NULL) return 4;
  printf("old program: %s, ABI %u, x = %g, rng draw %.17g\n", am_version(), am_abi_version(), x, am_rng_uniform(&rng));
  am_registry_destroy(&reg);
  am_record_destroy(&r);
  am_context_destroy(&ctx);
  return 0;
}
