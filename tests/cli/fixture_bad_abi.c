/* Test fixture: a plugin module whose descriptor carries a wrong ABI number. The host must reject it
 * (a line in the load report) without reading anything else or calling any of its code. */
#include <attnmech/plugin.h>

static const am_plugin_desc desc = {
    AM_ABI_VERSION + 1000u, sizeof(am_plugin_desc), AM_PLUGIN_ESTIMATOR, "cli-bad-abi", "0", "wrong ABI fixture",
    0, 0, AM_DATA_ATTENTION, 0, 0, 0, 0, 0, 0};

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &desc; }
