/* attnmech — the one place the version numbers live (meson.build reads them from here). */
#ifndef ATTNMECH_VERSION_H
#define ATTNMECH_VERSION_H

#define AM_VERSION_MAJOR 0
#define AM_VERSION_MINOR 2
#define AM_VERSION_PATCH 0

/* Plugin ABI: a plugin's descriptor must carry exactly this number. Bump it on any change to
 * plugin.h that is not an append at the end of a struct whose struct_size the host checks. */
#define AM_ABI_VERSION 2

/* Library soname (libattnmech.so.<AM_SOVERSION>), versioned separately from the plugin ABI. */
#define AM_SOVERSION 2

#endif
