// msa_core — reading a multiple sequence alignment the way plmc does: the file (plain or gzip, by content),
// its format (FASTA / A2M / A3M / Stockholm, by content), the alphabet, focus mode and the site numbering
// (docs/msa.md). Errors are am::sdk::Error (AM_ERR_FORMAT for the file's content, AM_ERR_USAGE for the
// user's settings, AM_ERR_IO for the file system), each message naming the file and the record.
#ifndef ATTNMECH_MSA_ALIGNMENT_HPP
#define ATTNMECH_MSA_ALIGNMENT_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "buffer.hpp"

namespace am::msa {

// Largest alignment file read (compressed, and again after gunzip).
constexpr size_t kMaxFileBytes = size_t(2) << 30;

// Whether gzip files can be read (built with zlib).
bool gzip_supported();

// The records of an alignment as read: names (the whole header line after '>', or the Stockholm name) and rows of
// equal length (A3M insert letters already removed), stored compactly — every residue one byte in one buffer, every
// name in another, three uint32_t per record (ends of its name and row, its first line) — and counted by the
// reader's Tally against the memory budget. `format` is fasta, a2m, a3m or stockholm.
struct Records {
  std::string format;
  std::unique_ptr<Tally> tally = std::make_unique<Tally>();  // first: outlives the buffers that point at it
  Buffer<char> residues{tally.get()}, name_text{tally.get()};
  Buffer<uint32_t> row_end{tally.get()}, name_end{tally.get()}, line{tally.get()};
  Buffer<char> rf{tally.get()};  // Stockholm: the "#=GC RF" annotation joined over the blocks (empty: none)
  size_t rf_line = 0;            // its first line (0: none)

  size_t size() const { return line.size(); }
  std::string_view row(size_t k) const {
    const size_t b = k ? row_end[k - 1] : 0;
    return {residues.data() + b, row_end[k] - b};
  }
  std::string_view name(size_t k) const {
    const size_t b = k ? name_end[k - 1] : 0;
    return {name_text.data() + b, name_end[k] - b};
  }
  size_t line_of(size_t k) const { return line[k]; }
  size_t columns() const { return size() ? row(0).size() : 0; }
};

// The records of the regular file `path` (≤ kMaxFileBytes, plain or gzip by its magic bytes; gunzipped and parsed
// as a stream, so the file's text is never held whole), format by content: "# STOCKHOLM" → Stockholm, '>' → the
// FASTA family (A2M when it has lowercase letters or '.', A3M when rows align only without them). The reader's
// memory is its Records (about one byte per residue and name byte and 12 per record, plus 8 per record and the
// residues once more for Stockholm's hash of names and its joined blocks), checked against the memory budget
// before every growth: a file that cannot fit is refused with AM_ERR_NO_MEMORY naming the file, the sizes read so
// far and the budget. Line ends: LF, CRLF or CR.
Records read_records(const std::string &path);

// The same records from `text` (the content of `file`, for messages): the parser of read_records on bytes in memory,
// fed in pieces of `chunk` bytes (0: at once; tests cut lines and line ends across pieces, as a stream does).
Records parse_records(const std::string &text, const std::string &file, size_t chunk = 0);

// The most the reader's memory (Records::tally->peak()) can be for `text_bytes` of text. FASTA: 12 bytes of index per
// record of at least 2 bytes (">\n"), the residues and names at most the text: 7 per byte. Stockholm: 36 bytes per
// record (index, block bookkeeping, name hash) and 8 per sequence line, each line at least 4 bytes ("a A\n"): 11 per
// byte; the residues twice when interleaved blocks are joined, the names once, the join's offsets: 14 per byte. The
// buffers grow by half (×1.5) from 1 KB. Real alignments hold about 1 byte per byte of text (docs/msa.md, "Memory").
inline double reader_bytes_bound(double text_bytes) { return 1.5 * 14.0 * text_bytes + 65536.0; }

// The bytes of the regular file `path` (≤ kMaxFileBytes), gunzipped when it starts with gzip's magic bytes (every
// member), counted against the budget like the records (tests, tools).
std::string read_alignment_file(const std::string &path);

struct Alphabet {
  std::string name;     // protein | rna | dna | custom
  std::string letters;  // state k is letters[k]
  int gap_state = -1;   // index of '-' (else of '.') in letters, -1 if none
  bool dot_is_gap = false;  // '.' read as '-' (the built-in alphabets)
};

// "protein" ("-ACDEFGHIKLMNPQRSTVWY", plmc's order), "rna" ("-ACGU"), "dna" ("-ACGT") or the user's letters
// (2..127 distinct printable characters, no lowercase, no whitespace, no '>' or '#').
Alphabet make_alphabet(const std::string &spec);

// The encoded alignment: the kept rows (letters outside the alphabet drop a row) and the kept columns (a Stockholm
// file's "#=GC RF" insert columns go when it is honoured; focus mode drops columns where the focus sequence has a gap,
// and for protein also where it has a lowercase letter).
struct Alignment {
  std::string format;
  size_t C = 0, L = 0, M = 0;       // states, kept sites, kept rows
  std::vector<uint8_t> tokens;      // [M, L] row-major, states 0..C-1
  std::vector<uint32_t> record_of;  // [M] the record each kept row came from (its name: Records::name)
  std::vector<double> site_numbers; // [L]
  std::string site_numbering;       // how site_numbers were made (numbering_text): which columns, from where
  std::string focus_sequence;       // focus mode: the focus's letters at the kept sites
  size_t M_read = 0, M_dropped = 0, L_columns = 0;
  long focus_row = -1;              // index among the kept rows, -1 without focus
  long region_start = 1;            // START of NAME/START-END (1 without focus or region)
  std::vector<std::string> dropped_examples;  // up to a few "name: letter 'X' at column 17" lines
  bool rf_used = false;             // the Stockholm "#=GC RF" line chose the columns (rf = true and the file has one)
  size_t rf_inserts = 0;            // columns it marked as inserts (dropped)
  size_t focus_matches = 0;         // focus mode: records whose name starts with the id (the first is the focus)
  std::vector<std::string> focus_names;  // the first few of them (their names) ...
  std::vector<size_t> focus_lines;       // ... and lines
};

// Whether an RF annotation letter marks a match column: anything but HMMER's gap characters '.', '-', '_', '~'.
inline bool rf_match(char c) { return c != '.' && c != '-' && c != '_' && c != '~'; }

// Encodes `records` with `alphabet`; `focus` (may be empty) selects the first record whose name starts with
// it. `use_rf`: a Stockholm "#=GC RF" line keeps only its match columns (numbered among them; HMMER's reading) — an
// RF line whose length differs from the rows' is an AM_ERR_FORMAT error then (ignored when !use_rf). Needs ≥ 2 kept
// rows and ≥ 2 kept sites (both checked before the tokens are allocated; the tokens, M·L bytes, counted on the
// records' Tally first).
Alignment encode(const Records &records, const Alphabet &alphabet, const std::string &focus, const std::string &file,
                 bool use_rf = true);

// The warning of an ambiguous focus id (focus_matches > 1; "" otherwise): every match named up to a few, which one
// is the focus, how to choose another.
std::string focus_warning(const Alignment &a, const std::string &focus);

// The focus's region start: NAME/START-END right after the focus id (plmc's reading); for an id that reaches into the
// region (focus=NAME/START-END or NAME/START, the way to choose one of several domains), at the id's own last '/'
// (plmc would number such a focus from 1); else 1.
long region_start_of(const std::string &name, const std::string &focus);

}  // namespace am::msa

#endif
