// msa_core — reading a multiple sequence alignment the way plmc does: the file (plain or gzip, by content),
// its format (FASTA / A2M / A3M / Stockholm, by content), the alphabet, focus mode and the site numbering
// (docs/msa.md). Errors are am::sdk::Error (AM_ERR_FORMAT for the file's content, AM_ERR_USAGE for the
// user's settings, AM_ERR_IO for the file system), each message naming the file and the record.
#ifndef ATTNMECH_MSA_ALIGNMENT_HPP
#define ATTNMECH_MSA_ALIGNMENT_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::msa {

// Largest alignment file read (compressed, and again after gunzip).
constexpr size_t kMaxFileBytes = size_t(2) << 30;

// Whether gzip files can be read (built with zlib).
bool gzip_supported();

// The bytes of the regular file `path` (≤ kMaxFileBytes), gunzipped when it starts with gzip's magic bytes.
std::string read_alignment_file(const std::string &path);

// The records of an alignment as read: names (the whole header line after '>', or the Stockholm name) and
// rows of equal length (A3M insert letters already removed). `format` is fasta, a2m, a3m or stockholm.
struct Records {
  std::string format;
  std::vector<std::string> names, rows;
};

// Parses `text` (the content of `file`, for messages) by its content: "# STOCKHOLM" → Stockholm, '>' → the
// FASTA family (A2M when it has lowercase letters or '.', A3M when rows align only without them).
Records parse_records(const std::string &text, const std::string &file);

struct Alphabet {
  std::string name;     // protein | rna | dna | custom
  std::string letters;  // state k is letters[k]
  int gap_state = -1;   // index of '-' (else of '.') in letters, -1 if none
  bool dot_is_gap = false;  // '.' read as '-' (the built-in alphabets)
};

// "protein" ("-ACDEFGHIKLMNPQRSTVWY", plmc's order), "rna" ("-ACGU"), "dna" ("-ACGT") or the user's letters
// (2..127 distinct printable characters, no lowercase, no whitespace, no '>' or '#').
Alphabet make_alphabet(const std::string &spec);

// The encoded alignment: the kept rows (letters outside the alphabet drop a row) and the kept columns (focus
// mode drops columns where the focus sequence has a gap, and for protein also where it has a lowercase letter).
struct Alignment {
  std::string format;
  size_t C = 0, L = 0, M = 0;       // states, kept sites, kept rows
  std::vector<uint8_t> tokens;      // [M, L] row-major, states 0..C-1
  std::vector<std::string> names;   // of the kept rows
  std::vector<double> site_numbers; // [L]
  std::string focus_sequence;       // focus mode: the focus's letters at the kept sites
  size_t M_read = 0, M_dropped = 0, L_columns = 0;
  long focus_row = -1;              // index among the kept rows, -1 without focus
  long region_start = 1;            // START of NAME/START-END (1 without focus or region)
  std::vector<std::string> dropped_examples;  // up to a few "name: letter 'X' at column 17" lines
};

// Encodes `records` with `alphabet`; `focus` (may be empty) selects the first record whose name starts with
// it. Needs ≥ 2 kept rows and ≥ 2 kept sites.
Alignment encode(const Records &records, const Alphabet &alphabet, const std::string &focus, const std::string &file);

// The focus's region start: NAME/START-END right after the focus id (plmc's reading), else 1.
long region_start_of(const std::string &name, const std::string &focus);

}  // namespace am::msa

#endif
