/* Test fixture: a plugin module whose am_plugin_entry crashes (a write through a null pointer), as a broken
 * third-party module might. The CLI must name the module on stderr before the signal ends it (issue 37). */
#include <attnmech/plugin.h>

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) {
  volatile int *volatile nowhere = 0;
  *nowhere = 1;
  return 0;
}
