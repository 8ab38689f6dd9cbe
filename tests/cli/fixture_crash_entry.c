/* Test fixture: a plugin module whose am_plugin_entry crashes with SIGSEGV, as a broken third-party module might.
 * The CLI must name the module on stderr before the signal ends it (issue 37). The signal is raised, not made by a
 * write through a null pointer: in a sanitizer build UBSan would stop that write first (halt_on_error), and the
 * SIGSEGV this test is about would never come. */
#include <attnmech/plugin.h>

#include <signal.h>

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) {
  raise(SIGSEGV);
  return 0;
}
