// attnmech — glue shared by plugins whose instance is "the host plus parsed options" (header only).
//
// A plugin defines its option type, a parser `am_status parse(const am_host *, Opt *)` and a name with
// static storage (`constexpr char kName[] = "markov";`), then puts
//   am_glue::create<Opt, parse, kName>  and  am_glue::destroy<Opt>
// into its descriptor. Everything here is a template instantiated in the plugin itself: no globals, no
// static constructors, nothing exported. Exceptions never leave a callback: guarded() maps them to
// statuses with a message naming the plugin.
#ifndef ATTNMECH_PLUGIN_GLUE_HPP
#define ATTNMECH_PLUGIN_GLUE_HPP

#include <attnmech/plugin.h>

#include <new>

namespace am_glue {

template <class Opt>
struct instance {
  const am_host *host = nullptr;
  Opt opt{};
};

template <const char *Name, class F>
am_status guarded(am_context *ctx, F &&f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "%s: out of memory", Name);
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "%s: unexpected exception", Name);
  }
}

template <class Opt, am_status (*Parse)(const am_host *, Opt *), const char *Name>
am_status create(const am_host *host, void **out) {
  if (!host || !out) return AM_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  auto *in = new (std::nothrow) instance<Opt>();
  if (!in) return am_context_fail(host->ctx, AM_ERR_NO_MEMORY, "%s: out of memory", Name);
  in->host = host;
  const am_status st = guarded<Name>(host->ctx, [&] { return Parse(host, &in->opt); });
  if (st != AM_OK) {
    delete in;
    return st;
  }
  *out = in;
  return AM_OK;
}

template <class Opt>
void destroy(void *p) {
  delete static_cast<instance<Opt> *>(p);
}

template <class Opt>
const instance<Opt> *get(void *p) {
  return static_cast<const instance<Opt> *>(p);
}

}  // namespace am_glue

#endif
