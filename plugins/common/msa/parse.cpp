// msa_core — the records of an alignment file, format by content: Stockholm ("# STOCKHOLM" first), else the
// FASTA family ('>' records, sequences over several lines): rows of equal length are FASTA (A2M when they hold
// lowercase letters or '.'); rows that agree only without lowercase letters and '.' are A3M, read without them.
//
// The parser takes the text as a stream of bytes (any chunking: a line may span chunks) and keeps only the compact
// Records (alignment.hpp). A format error is not thrown at once: the rest of the stream is still checked for binary
// bytes, which take precedence (a PNG or random bytes are "binary data", not a ragged alignment).
#include <attnmech/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>

#include "source.hpp"

namespace am::msa {

namespace {

using am::sdk::Error;

Error format_error(const std::string &file, const std::string &what) {
  return Error(AM_ERR_FORMAT, "msa: " + file + ": " + what);
}

// Blanks inside a line ('\r' and '\n' end lines: LF, CRLF and CR line ends are read alike).
bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
bool is_insert(char c) { return c == '.' || std::islower(static_cast<unsigned char>(c)); }

std::string hex_byte(unsigned char c) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", c);
  return hex;
}

std::string human_bytes(double b) {
  char buf[32];
  if (b < 1e3) std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  else if (b < 1e6) std::snprintf(buf, sizeof buf, "%.1f KB", b / 1e3);
  else if (b < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}

constexpr char kBom[] = "\xEF\xBB\xBF";
constexpr char kStockholm[] = "# STOCKHOLM";
constexpr size_t kStockholmLen = sizeof kStockholm - 1;

enum class Mode { Prelude, Fasta, Stockholm, AfterEnd, Scan };
// What the current line is, as far as it has been read.
enum class Kind { Start, First, Header, Seq, Skip, Name, Gap, Tag, Rf };

class Parser {
 public:
  Parser(const std::string &file, Records &r) : file_(file), r_(r) {}

  void feed(const char *p, size_t n) {
    for (size_t i = 0; i < n; ++i, ++offset_) {
      const unsigned char c = static_cast<unsigned char>(p[i]);
      if (bom_ < 3 && offset_ == bom_ && c == static_cast<unsigned char>(kBom[bom_])) {
        ++bom_;  // a UTF-8 byte-order mark at the start: skipped whole, replayed when it is not one
        continue;
      }
      if (bom_ < 3) replay_bom();
      if (in_residues() && c > 0x20 && c < 0x7f) {  // a run of residue letters: appended at once
        size_t j = i + 1;
        while (j < n && static_cast<unsigned char>(p[j]) > 0x20 && static_cast<unsigned char>(p[j]) < 0x7f) ++j;
        r_.residues.append(p + i, j - i);
        col_ += j - i;
        if (kind_ == Kind::Gap) seq_chars_ += j - i;
        after_cr_ = false;
        offset_ += j - i - 1;
        i = j - 1;
        continue;
      }
      byte(c, offset_);
    }
  }

  void finish() {
    if (bom_ < 3) replay_bom();
    if (col_ > 0) end_line();
    if (pending_) throw *pending_;
    if (mode_ == Mode::Prelude) throw format_error(file_, "empty file: no sequences");
    if (mode_ == Mode::Fasta) {
      close_record();
    } else {
      if (r_.size() == 0) throw format_error(file_, "no sequences (a Stockholm header without records)");
      join_blocks();
    }
    settle_columns();
    if (r_.row(0).empty()) throw format_error(file_, "the sequences are empty (no columns)");
  }

 private:
  const std::string &file_;
  Records &r_;
  Mode mode_ = Mode::Prelude;
  Kind kind_ = Kind::Start;
  uint64_t offset_ = 0;
  size_t bom_ = 0;                 // bytes of the byte-order mark matched at the start (3: done with it)
  size_t line_ = 1, col_ = 0;      // the current line and its bytes so far
  bool after_cr_ = false;          // the last byte was '\r': a '\n' right after it ends no further line
  std::optional<Error> pending_;   // the first format error; reported at the end unless binary data turns up
  std::string first_;              // the prelude line so far (its first 40 bytes), for the format and the message
  bool first_bad_ = false;         // that line starts like no alignment
  size_t name_begin_ = 0;          // Stockholm: where the current line's name starts in name_text
  size_t seq_chars_ = 0;           // Stockholm: sequence letters on the current line
  std::string tag_;                // Stockholm: a '#' line's start so far, to find "#=GC RF" (its words, one blank)
  bool leading_ = false;           // FASTA header: still skipping blanks after '>'
  // Stockholm: the block (blocks are separated by blank lines), each record's last block and line, the pieces of
  // the rows in file order (record, start in residues) and an open-addressing hash of the names (record + 1).
  uint32_t block_ = 0;
  bool new_block_ = true;
  Buffer<uint32_t> seen_block_{r_.tally.get()}, seen_line_{r_.tally.get()};
  Buffer<uint32_t> piece_rec_{r_.tally.get()}, piece_start_{r_.tally.get()}, slots_{r_.tally.get()};

  // The line is past its start and is sequence letters (a FASTA sequence line, a Stockholm line after its name).
  bool in_residues() const {
    return (kind_ == Kind::Seq && mode_ == Mode::Fasta) || (kind_ == Kind::Gap && mode_ == Mode::Stockholm);
  }

  void replay_bom() {
    const size_t k = bom_;
    bom_ = 3;
    for (size_t i = 0; i < k; ++i) byte(static_cast<unsigned char>(kBom[i]), i);
  }

  void defer(Error e) {
    if (!pending_) pending_ = std::move(e);
    mode_ = Mode::Scan;
  }

  void byte(unsigned char c, uint64_t off) {
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      return;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      end_line();
      ++line_;
      col_ = 0;
      kind_ = Kind::Start;
      return;
    }
    ++col_;
    if (c < 0x20 && !is_space(c))
      throw format_error(file_, "binary data (byte " + hex_byte(c) + " at offset " + std::to_string(off) + ", line " +
                                    std::to_string(line_) + "), not a FASTA/A2M/A3M/Stockholm alignment");
    switch (mode_) {
      case Mode::Prelude: return prelude(c);
      case Mode::Fasta: return fasta(c);
      case Mode::Stockholm: return stockholm(c);
      case Mode::AfterEnd:  // the rest of the "//" line is ignored, later lines must be blank
        if (kind_ != Kind::Skip && !is_space(c))
          defer(format_error(file_, "line " + std::to_string(line_) +
                                        ": text after the Stockholm end '//' (one alignment per file)"));
        return;
      case Mode::Scan: return;
    }
  }

  // Residue bytes must be ASCII: a UTF-8 letter is 2–4 bytes and would count as as many columns.
  bool ascii_residue(unsigned char c) {
    if (c < 0x80) return true;
    defer(format_error(file_, "line " + std::to_string(line_) + ", column " + std::to_string(col_) + ": byte " +
                                  hex_byte(c) + " is not ASCII: sequence letters must be ASCII (a UTF-8 character "
                                  "is 2 to 4 bytes and would count as that many columns; names may hold UTF-8)"));
    return false;
  }

  // Before the first non-blank line: '>' in column 1 starts FASTA, "# STOCKHOLM" Stockholm; anything else is
  // refused with the line's first 40 bytes.
  void prelude(unsigned char c) {
    if (kind_ == Kind::Start && col_ == 1 && c == '>') {
      mode_ = Mode::Fasta;
      r_.format = "fasta";
      return fasta(c);
    }
    kind_ = Kind::First;
    if (first_.size() < 40) first_.push_back(static_cast<char>(c));
    const bool blank = first_.find_first_not_of(" \t\f\v") == std::string::npos;
    if (!first_bad_ && first_.compare(0, first_.size(), kStockholm, std::min(first_.size(), kStockholmLen)) != 0 &&
        !blank)
      first_bad_ = true;
    if (!first_bad_ && first_.compare(0, std::string::npos, kStockholm) == 0) {  // the rest of the line is skipped
      mode_ = Mode::Stockholm;
      r_.format = "stockholm";
      kind_ = Kind::Skip;
    } else if (first_bad_ && first_.size() == 40) {
      not_an_alignment();
    }
  }

  void not_an_alignment() {
    defer(format_error(file_, "not an alignment: line " + std::to_string(line_) + " starts with '" + first_ +
                                  "' (expected '>' of FASTA/A2M/A3M or '# STOCKHOLM 1.0')"));
  }

  void fasta(unsigned char c) {
    if (kind_ == Kind::Start) {
      if (col_ == 1 && c == '>') {
        close_record();
        r_.line.push_back(static_cast<uint32_t>(line_));
        kind_ = Kind::Header;
        leading_ = true;
        return;
      }
      kind_ = Kind::Seq;
    }
    if (kind_ == Kind::Header) {
      if (leading_ && is_space(c)) return;
      leading_ = false;
      r_.name_text.push_back(static_cast<char>(c));
      return;
    }
    if (is_space(c) || !ascii_residue(c)) return;
    r_.residues.push_back(static_cast<char>(c));
  }

  void close_record() {
    if (r_.row_end.size() < r_.line.size()) r_.row_end.push_back(static_cast<uint32_t>(r_.residues.size()));
  }

  void stockholm(unsigned char c) {
    switch (kind_) {
      case Kind::Start:
        if (is_space(c)) return;
        if (c == '#') {  // #=GF, #=GC, #=GR, #=GS and comments: skipped, but for the match columns "#=GC RF"
          kind_ = Kind::Tag;
          tag_ = "#";
          return;
        }
        kind_ = Kind::Name;
        name_begin_ = r_.name_text.size();
        seq_chars_ = 0;
        [[fallthrough]];
      case Kind::Name:
        if (is_space(c)) {
          resolve_name();
          if (mode_ == Mode::Stockholm) kind_ = Kind::Gap;
          return;
        }
        r_.name_text.push_back(static_cast<char>(c));
        if (r_.name_text.size() - name_begin_ == 2 && r_.name_text[name_begin_] == '/' && c == '/') {
          r_.name_text.truncate(name_begin_);  // "//": the end of the alignment
          mode_ = Mode::AfterEnd;
          kind_ = Kind::Skip;
        }
        return;
      case Kind::Gap:
        if (is_space(c) || !ascii_residue(c)) return;
        r_.residues.push_back(static_cast<char>(c));
        ++seq_chars_;
        return;
      case Kind::Tag: return tag(c);
      case Kind::Rf:
        if (!is_space(c) && ascii_residue(c)) r_.rf.push_back(static_cast<char>(c));
        return;
      default:
        return;  // Skip
    }
  }

  // A '#' line's start: "#=GC", blanks, "RF", blanks, then the annotation (Kind::Rf, joined over the blocks); any
  // other '#' line is skipped.
  void tag(unsigned char c) {
    static const std::string kRf = "#=GC RF ";
    if (is_space(c)) {
      if (tag_.back() == ' ') return;  // runs of blanks read as one
      c = ' ';
    }
    tag_.push_back(static_cast<char>(c));
    if (tag_ == kRf) {
      kind_ = Kind::Rf;
      if (r_.rf_line == 0) r_.rf_line = line_;
    } else if (kRf.compare(0, tag_.size(), tag_) != 0) {
      kind_ = Kind::Skip;
    }
  }

  std::string_view pending_name() const {
    return {r_.name_text.data() + name_begin_, r_.name_text.size() - name_begin_};
  }

  // The slot of `name` in the hash (its record + 1 there, or the empty slot where it would go).
  size_t slot_of(std::string_view name) const {
    const size_t mask = slots_.size() - 1;
    for (size_t s = fnv1a(name.data(), name.size()) & mask;; s = (s + 1) & mask) {
      const uint32_t k = slots_[s];
      if (k == 0 || r_.name(k - 1) == name) return s;
    }
  }

  void rehash(size_t n) {
    slots_.free_storage();
    slots_.set_size(n);
    std::fill(slots_.data(), slots_.data() + n, 0u);
    for (size_t k = 0; k < r_.size(); ++k) slots_[slot_of(r_.name(k))] = static_cast<uint32_t>(k + 1);
  }

  // The name of a sequence line is complete: its record (new, or the next block's part of an earlier one).
  void resolve_name() {
    if (new_block_) ++block_, new_block_ = false;
    if (slots_.size() < 2 * (r_.size() + 1)) {  // at most half full; a power of two (the probe masks)
      size_t n = 1024;
      while (n < 4 * (r_.size() + 1)) n *= 2;
      rehash(n);
    }
    const size_t s = slot_of(pending_name());
    uint32_t k = slots_[s];
    if (k != 0) {
      --k;
      r_.name_text.truncate(name_begin_);
      if (seen_block_[k] == block_) {
        defer(format_error(file_, "line " + std::to_string(line_) + ": '" + std::string(r_.name(k)) +
                                      "' appears twice in one block (lines " + std::to_string(seen_line_[k]) + " and " +
                                      std::to_string(line_) + "): a Stockholm block holds each sequence once; "
                                      "blocks are separated by blank lines"));
        return;
      }
      seen_block_[k] = block_;
      seen_line_[k] = static_cast<uint32_t>(line_);
    } else {
      k = static_cast<uint32_t>(r_.size());
      r_.line.push_back(static_cast<uint32_t>(line_));
      r_.name_end.push_back(static_cast<uint32_t>(r_.name_text.size()));
      seen_block_.push_back(block_);
      seen_line_.push_back(static_cast<uint32_t>(line_));
      slots_[s] = k + 1;
    }
    piece_rec_.push_back(k);
    piece_start_.push_back(static_cast<uint32_t>(r_.residues.size()));
  }

  void end_line() {
    switch (mode_) {
      case Mode::Prelude:  // a line that is not blank and did not start an alignment
        if (first_.find_first_not_of(" \t\f\v") != std::string::npos) not_an_alignment();
        first_.clear();
        return;
      case Mode::Fasta:
        if (kind_ == Kind::Header) {  // the name without its trailing blanks
          const size_t begin = r_.name_end.size() ? r_.name_end.back() : 0;
          size_t e = r_.name_text.size();
          while (e > begin && is_space(static_cast<unsigned char>(r_.name_text[e - 1]))) --e;
          r_.name_text.truncate(e);
          r_.name_end.push_back(static_cast<uint32_t>(e));
        }
        return;
      case Mode::Stockholm:
        if (kind_ == Kind::Start) new_block_ = true;  // a blank line ends a block
        if (kind_ == Kind::Name) resolve_name();
        if ((kind_ == Kind::Name || kind_ == Kind::Gap) && seq_chars_ == 0 && mode_ == Mode::Stockholm)
          defer(format_error(file_, "line " + std::to_string(line_) + ": '" +
                                        std::string(r_.name(piece_rec_.back())) +
                                        "' has no sequence (Stockholm lines are NAME SEQUENCE)"));
        return;
      default:
        return;
    }
  }

  // Stockholm: the pieces of every row joined in file order. One piece per record in record order (a file of one
  // block) is already the rows; interleaved blocks are copied into a second buffer, counted first.
  void join_blocks() {
    const size_t n = r_.size(), P = piece_rec_.size();
    r_.row_end.set_size(n);
    bool in_place = P == n;
    for (size_t p = 0; in_place && p < P; ++p) in_place = piece_rec_[p] == p;
    const auto piece_end = [&](size_t p) { return p + 1 < P ? piece_start_[p + 1] : uint32_t(r_.residues.size()); };
    if (in_place) {
      for (size_t k = 0; k < n; ++k) r_.row_end[k] = piece_end(k);
      return;
    }
    std::fill(r_.row_end.data(), r_.row_end.data() + n, 0u);
    for (size_t p = 0; p < P; ++p) r_.row_end[piece_rec_[p]] += piece_end(p) - piece_start_[p];
    Buffer<uint32_t> at(r_.tally.get());  // where each row's next piece goes
    at.set_size(n);
    uint32_t total = 0;
    for (size_t k = 0; k < n; ++k) at[k] = total, total += r_.row_end[k], r_.row_end[k] = total;
    Buffer<char> joined(r_.tally.get());
    joined.set_size(r_.residues.size());
    for (size_t p = 0; p < P; ++p) {
      const uint32_t len = piece_end(p) - piece_start_[p];
      std::memcpy(joined.data() + at[piece_rec_[p]], r_.residues.data() + piece_start_[p], len);
      at[piece_rec_[p]] += len;
    }
    r_.residues = std::move(joined);
  }

  // Index of the first row whose length differs from row 0's (measured by `len`), size() if none.
  template <class Len>
  size_t first_ragged(Len len) const {
    const size_t n0 = len(0);
    for (size_t k = 1; k < r_.size(); ++k)
      if (len(k) != n0) return k;
    return r_.size();
  }

  size_t match_length(size_t k) const {
    size_t m = 0;
    for (char c : r_.row(k)) m += !is_insert(c);
    return m;
  }

  // Equal rows as they are; else A3M when the rows agree without insert letters (removed in place); else a message
  // naming the record.
  void settle_columns() {
    const auto raw = [&](size_t k) { return r_.row(k).size(); };
    const size_t bad = first_ragged(raw);
    if (bad == r_.size()) {
      if (r_.format == "fasta")
        for (size_t i = 0; i < r_.residues.size(); ++i)
          if (is_insert(r_.residues[i])) {
            r_.format = "a2m";
            break;
          }
      return;
    }
    if (r_.format == "fasta" && first_ragged([&](size_t k) { return match_length(k); }) == r_.size()) {
      size_t w = 0, b = 0;
      for (size_t k = 0; k < r_.size(); ++k) {
        const size_t e = r_.row_end[k];
        for (; b < e; ++b)
          if (!is_insert(r_.residues[b])) r_.residues[w++] = r_.residues[b];
        r_.row_end[k] = static_cast<uint32_t>(w);
      }
      r_.residues.truncate(w);
      r_.format = "a3m";
      return;
    }
    throw format_error(file_, "record '" + std::string(r_.name(bad)) + "' (line " + std::to_string(r_.line_of(bad)) +
                                  ") has " + std::to_string(r_.row(bad).size()) + " columns, the first record '" +
                                  std::string(r_.name(0)) + "' has " + std::to_string(r_.row(0).size()) +
                                  " (the rows of an alignment must have equal length" +
                                  (r_.format == "fasta" ? "; A3M rows must agree without lowercase letters and '.')"
                                                        : ")"));
  }
};

// The sizes read so far for the memory message, and what the whole file would need at the same rate (the part of the
// file read so far: of the compressed bytes for gzip).
std::string reading_what(const std::string &file, const Records &r, const SourceInfo *info, double bytes) {
  std::string s = "msa: " + file + ": reading the alignment (";
  if (info) {
    if (info->gzip)
      s += human_bytes(double(info->text_bytes)) + " of text so far, inflated from " +
           human_bytes(double(info->read_bytes)) + " of a " + human_bytes(double(info->file_bytes)) + " gzip file";
    else
      s += human_bytes(double(info->text_bytes)) + " read of a " + human_bytes(double(info->file_bytes)) + " file";
    s += "; ";
  }
  s += std::to_string(r.size()) + " records, " + human_bytes(double(r.residues.size())) + " of residues, " +
       human_bytes(double(r.name_text.size())) + " of names";
  const double done = info ? double(info->gzip ? info->read_bytes : info->text_bytes) : 0;
  if (info && done > 0 && double(info->file_bytes) > done)
    s += "; about " + human_bytes(bytes * double(info->file_bytes) / done) + " for the whole file";
  return s + ")";
}

}  // namespace

Records read_records(const std::string &path) {
  Records r;
  SourceInfo info;
  r.tally->describe = [&](double bytes) { return reading_what(path, r, &info, bytes); };
  {
    Parser p(path, r);
    stream_file(path, info, [&](const char *s, size_t n) { p.feed(s, n); });
    p.finish();
  }
  r.tally->describe = nullptr;
  return r;
}

Records parse_records(const std::string &text, const std::string &file, size_t chunk) {
  Records r;
  r.tally->describe = [&](double bytes) { return reading_what(file, r, nullptr, bytes); };
  {
    Parser p(file, r);
    const size_t step = chunk > 0 ? chunk : std::max<size_t>(text.size(), 1);
    for (size_t at = 0; at < text.size(); at += step) p.feed(text.data() + at, std::min(step, text.size() - at));
    p.finish();
  }
  r.tally->describe = nullptr;
  return r;
}

}  // namespace am::msa
