/* hello.c — the smallest program on attnmech's C API, built by CMake with find_package(attnmech)
 * (examples/cmake/CMakeLists.txt): it prints the library's version and plugin directory, checks that the
 * header, the library and the CMake package agree on the version and the plugin ABI. */
#include <attnmech/attnmech.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  am_registry_summary s = {sizeof s, 0, 0, 0, NULL};
  if (am_registry_info(NULL, &s) != AM_OK) {
    fprintf(stderr, "hello: am_registry_info failed\n");
    return 1;
  }
  printf("attnmech %s (header %s, CMake package %s), plugin ABI %u, plugins in %s\n", am_version(),
         AM_VERSION_STRING, EXPECTED_VERSION, (unsigned)am_abi_version(), s.install_dir ? s.install_dir : "(none)");
  if (strcmp(am_version(), AM_VERSION_STRING) != 0 || strcmp(am_version(), EXPECTED_VERSION) != 0) {
    fprintf(stderr, "hello: the library, its header and the CMake package disagree on the version\n");
    return 1;
  }
  return am_abi_version() == AM_ABI_VERSION ? 0 : 1;
}
