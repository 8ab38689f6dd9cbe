// msa_core (internal) — the alignment file as a stream of bytes (read_file.cpp) for the parser (parse.cpp).
#ifndef ATTNMECH_MSA_SOURCE_HPP
#define ATTNMECH_MSA_SOURCE_HPP

#include <cstdint>
#include <functional>
#include <string>

#include "alignment.hpp"

namespace am::msa {

// What has been read so far (for messages): the file's size, the bytes read from it, the text they gave.
struct SourceInfo {
  std::string path;
  uint64_t file_bytes = 0, read_bytes = 0, text_bytes = 0;
  bool gzip = false;
};

using Sink = std::function<void(const char *, size_t)>;

// The file's text (gunzipped when it starts with gzip's magic bytes) to `sink` in chunks, ≤ kMaxFileBytes in all;
// AM_ERR_IO / AM_ERR_FORMAT / AM_ERR_USAGE (no path) as am::sdk::Error.
void stream_file(const std::string &path, SourceInfo &info, const Sink &sink);

}  // namespace am::msa

#endif
