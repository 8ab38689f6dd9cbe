// The formats and plmc's conventions on fixtures counted by hand (tests/data/msa; the A2M fixture's focus sites
// and weights were also checked once against plmc 'bin/plmc -f FOC_HUMAN -c ... --save-weights ...').
#include <doctest/doctest.h>

#include "msa_test_util.hpp"

using namespace msa_test;

namespace {
const std::string kProtein = "-ACDEFGHIKLMNPQRSTVWY";
}

TEST_CASE("msa formats: protein alphabet is plmc's order, gap = state 0") {
  const am::msa::Alphabet a = am::msa::make_alphabet("protein");
  CHECK(a.letters == kProtein);
  CHECK(a.gap_state == 0);
  CHECK(am::msa::make_alphabet("rna").letters == "-ACGU");
  CHECK(am::msa::make_alphabet("dna").letters == "-ACGT");
  CHECK(am::msa::make_alphabet(".ACGU").gap_state == 0);   // plmc's README alphabet for RNA: '.' is the gap
  CHECK(am::msa::make_alphabet("AB-").gap_state == 2);
  CHECK(am::msa::make_alphabet("AB").gap_state == -1);
}

TEST_CASE("msa formats: A2M without focus keeps every column, lowercase read as uppercase, '.' as gap") {
  const am::msa::Alignment a = read(fixture("focus.a2m"));
  CHECK(a.format == "a2m");
  CHECK(a.M_read == 5);
  CHECK(a.M_dropped == 1);  // s4 has 'B'
  REQUIRE(a.M == 4);
  CHECK(a.L == 8);
  CHECK(a.L_columns == 8);
  CHECK(a.C == 21);
  CHECK(row(a, 0, kProtein) == "MKAV-LCW");
  CHECK(row(a, 1, kProtein) == "MRGV-LDW");  // two lines joined
  CHECK(row(a, 2, kProtein) == "M--IAL-F");
  CHECK(row(a, 3, kProtein) == "MKAV-LCW");
  CHECK(name_of(fixture("focus.a2m"), a, 3) == "s5");
  CHECK(a.site_numbers == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(a.focus_row == -1);
  CHECK(a.focus_sequence.empty());
  REQUIRE(a.dropped_examples.size() == 1);
  CHECK(a.dropped_examples[0] == "s4 has B, outside the protein alphabet: 'B' at column 3");
}

TEST_CASE("msa formats: focus mode drops the focus's lowercase and gap columns and numbers from its region") {
  const am::msa::Alignment a = read(fixture("focus.a2m"), "FOC_HUMAN");
  REQUIRE(a.M == 4);
  REQUIRE(a.L == 5);  // columns 1, 2, 4, 6, 8 of "MKaV-LcW"
  CHECK(a.region_start == 10);
  CHECK(a.site_numbers == std::vector<double>{10, 11, 13, 15, 17});  // column index (0-based) + 10, as plmc
  CHECK(a.focus_sequence == "MKVLW");
  CHECK(a.focus_row == 0);
  CHECK(row(a, 1, kProtein) == "MRVLW");
  CHECK(row(a, 2, kProtein) == "M-ILF");
  CHECK(row(a, 3, kProtein) == "MKVLW");
}

TEST_CASE("msa formats: the focus is the first name starting with the id; no region → numbering from 1") {
  const am::msa::Alignment a = read(fixture("focus.a2m"), "s");  // s2 is the first name starting with "s"
  CHECK(a.focus_row == 1);
  CHECK(a.region_start == 1);
  REQUIRE(a.L == 5);  // "MRgV-LdW": columns 1, 2, 4, 6, 8
  CHECK(a.site_numbers == std::vector<double>{1, 2, 4, 6, 8});
  CHECK(a.focus_sequence == "MRVLW");
  CHECK(am::msa::region_start_of("X/25-80", "X") == 25);
  CHECK(am::msa::region_start_of("X/25", "X") == 25);
  CHECK(am::msa::region_start_of("X/a-80", "X") == 1);
  CHECK(am::msa::region_start_of("X/", "X") == 1);
  CHECK(am::msa::region_start_of("XY/3-9", "X") == 1);  // the '/' must follow the id
  // an id reaching into the region (choosing one of several domains): START at the id's own '/'
  CHECK(am::msa::region_start_of("X/140-147 second domain", "X/140-147") == 140);
  CHECK(am::msa::region_start_of("X/140-147", "X/14") == 140);
  CHECK(am::msa::region_start_of("X/140-147", "X/") == 140);
  CHECK(am::msa::region_start_of("X/a/7-9", "X/a") == 7);  // plmc's reading first: right after the id
}

TEST_CASE("msa formats: other alphabets in focus mode drop only the focus's gap columns") {
  TempDir d("msa-rna");
  const std::string f = write(d, "r.fa", ">q/5-9\nAcG.U-\n>t\nacgu.A\n");
  const am::msa::Alignment a = read(f, "q", "rna");
  REQUIRE(a.L == 4);  // '.' and '-' are gaps (the built-in alphabets); lowercase 'c' stays
  CHECK(a.site_numbers == std::vector<double>{5, 6, 7, 9});
  CHECK(a.focus_sequence == "ACGU");
  CHECK(row(a, 1, "-ACGU") == "ACG-");
}

TEST_CASE("msa formats: A3M rows align once their lowercase insert letters are removed") {
  const am::msa::Alignment a = read(fixture("inserts.a3m"));
  CHECK(a.format == "a3m");
  REQUIRE(a.M == 4);
  REQUIRE(a.L == 5);
  CHECK(row(a, 0, kProtein) == "ACDEF");
  CHECK(row(a, 1, kProtein) == "ACD-F");
  CHECK(row(a, 2, kProtein) == "-CDEF");
  CHECK(row(a, 3, kProtein) == "ACDEF");
  CHECK(name_of(fixture("inserts.a3m"), a, 0) == "q query");  // the whole header line, as plmc (focus ids match its start)
}

TEST_CASE("msa formats: Stockholm, interleaved blocks joined per name, #= lines skipped") {
  const am::msa::Alignment a = read(fixture("interleaved.sto"));
  CHECK(a.format == "stockholm");
  REQUIRE(a.M == 2);
  REQUIRE(a.L == 10);
  CHECK(row(a, 0, kProtein) == "AC-DEFG-HI");
  CHECK(row(a, 1, kProtein) == "ACQDEFGKHI");
  const am::msa::Alignment f = read(fixture("interleaved.sto"), "seq2");
  REQUIRE(f.L == 9);  // the focus's lowercase 'k' column goes
  CHECK(f.site_numbers == std::vector<double>{3, 4, 5, 6, 7, 8, 9, 11, 12});
  CHECK(row(f, 0, kProtein) == "AC-DEFGHI");
}

TEST_CASE("msa formats: Stockholm #=GC RF keeps its match columns (HMMER's reading), numbered among them; rf=0 keeps "
          "every column") {
  // rf.sto: 11 columns in two blocks, RF "xx.xxxx" + "xx.x": columns 3 and 10 (1-based) are inserts
  const std::string file = fixture("rf.sto");
  const am::msa::Alignment a = read(file);
  CHECK(a.format == "stockholm");
  CHECK(a.rf_used);
  CHECK(a.rf_inserts == 2);
  CHECK(a.L_columns == 11);
  REQUIRE(a.M == 3);
  REQUIRE(a.L == 9);
  CHECK(row(a, 0, kProtein) == "ACDE-FGHI");
  CHECK(row(a, 1, kProtein) == "ACDEKFGHI");  // its insert letters g and k are gone with their columns
  CHECK(row(a, 2, kProtein) == "A-DQKYGHV");
  CHECK(a.site_numbers == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(a.site_numbering.find("#=GC RF match columns") != std::string::npos);
  // focus mode among the match columns: dom1 has a residue at match columns 0-3 and 5-8, numbered from its START 11
  const am::msa::Alignment f = read(file, "dom1");
  REQUIRE(f.L == 8);
  CHECK(f.site_numbers == std::vector<double>{11, 12, 13, 14, 16, 17, 18, 19});
  CHECK(f.focus_sequence == "ACDEFGHI");
  // rf=0: every column as before (lowercase read as uppercase, '.' as gap); focus mode numbers the file's columns
  const am::msa::Alignment all = read(file, "", "protein", false);
  CHECK_FALSE(all.rf_used);
  REQUIRE(all.L == 11);
  CHECK(row(all, 0, kProtein) == "AC-DE-FGH-I");
  CHECK(row(all, 1, kProtein) == "ACGDEKFGHKI");
  CHECK(row(all, 2, kProtein) == "A--DQKYGH-V");
  CHECK(all.site_numbering.find("stockholm rows (every column)") != std::string::npos);
  const am::msa::Alignment fa = read(file, "dom1", "protein", false);
  CHECK(fa.site_numbers == std::vector<double>{11, 12, 14, 15, 17, 18, 19, 21});
  // an RF line whose length is not the rows' is refused when it is honoured, ignored with rf=0
  TempDir d("msa-rf");
  const std::string bad = write(d, "bad.sto", "# STOCKHOLM 1.0\na ACDEFGH\nb ACDEFGH\n#=GC RF xxx.xx\n//\n");
  expect_error([&] { read(bad); }, AM_ERR_FORMAT, {"bad.sto", "#=GC RF line (line 4) has 6 columns, the rows 7", "rf=0"});
  CHECK(read(bad, "", "protein", false).L == 7);
  // other #= lines are not RF (RFX, a #=GR line of a sequence named RF); every column an insert leaves no site
  const std::string other = write(d, "other.sto", "# STOCKHOLM 1.0\na ACDE\nb ACDE\n#=GC RFX ..x.\n#=GR a RF ....\n//\n");
  CHECK_FALSE(read(other).rf_used);
  CHECK(read(other).L == 4);
  const std::string none = write(d, "none.sto", "# STOCKHOLM 1.0\na ACDE\nb ACDE\n#=GC RF .-_~\n//\n");
  expect_error([&] { read(none); }, AM_ERR_FORMAT, {"0 of 4 columns remain after the 4 insert columns", "rf=0 keeps them"});
}

TEST_CASE("msa formats: one alignment numbered as A2M (every column counted, plmc's offsets) and as A3M (inserts "
          "removed first)") {
  // numbering.a2m and numbering.a3m are one alignment: the focus FOC/5-10 (residues 5..10) and two insert columns of
  // the other rows between its residues ('.' in the focus's A2M row, absent from its A3M row)
  const am::msa::Alignment a2 = read(fixture("numbering.a2m"), "FOC"), a3 = read(fixture("numbering.a3m"), "FOC");
  CHECK(a2.format == "a2m");
  CHECK(a3.format == "a3m");
  REQUIRE(a2.L == 6);
  REQUIRE(a3.L == 6);
  CHECK(a2.tokens == a3.tokens);  // the same sites and letters ...
  CHECK(a2.focus_sequence == "ACDEFG");
  CHECK(a3.focus_sequence == "ACDEFG");
  // ... numbered by the documented rule, site = c + START with c the focus's residue columns among the rows as read:
  // "AC.DE.FG" (A2M: every column) gives c = 0 1 3 4 6 7, "ACDEFG" (A3M: insert letters removed) c = 0..5
  const auto numbers = [](const std::string &focus_row, double start) {
    std::vector<double> n;
    for (size_t c = 0; c < focus_row.size(); ++c)
      if (focus_row[c] >= 'A' && focus_row[c] <= 'Z') n.push_back(double(c) + start);
    return n;
  };
  CHECK(a2.site_numbers == numbers("AC.DE.FG", 5));
  CHECK(a3.site_numbers == numbers("ACDEFG", 5));
  CHECK(a2.site_numbers == std::vector<double>{5, 6, 8, 9, 11, 12});  // past the region's end 10: plmc's numbering
  CHECK(a3.site_numbers == std::vector<double>{5, 6, 7, 8, 9, 10});   // the focus's residue numbers
  CHECK(a2.site_numbering == "site = c + START, START = 5 (from the focus's NAME/START-END, else 1), c = 0-based "
                             "column among the a2m rows (every column, also those where the focus has a gap)");
  CHECK(a3.site_numbering == "site = c + START, START = 5 (from the focus's NAME/START-END, else 1), c = 0-based "
                             "column among the a3m rows without their insert letters (lowercase, '.')");
  CHECK(read(fixture("numbering.a3m")).site_numbering ==
        "site = c + 1, c = 0-based column among the a3m rows without their insert letters (lowercase, '.')");
}

TEST_CASE("msa formats: a gzip file is read by its magic bytes, whatever its name") {
  TempDir d("msa-gz");
  const std::string plain = am_test::slurp(fixture("interleaved.sto"));
  const std::string gz = am_test::slurp(fixture("interleaved.sto.gz"));
  const std::string renamed = write(d, "alignment.txt", gz);
  if (!am::msa::gzip_supported()) {
    expect_error([&] { am::msa::read_alignment_file(renamed); }, AM_ERR_FORMAT, {"gzip", "zlib", renamed});
    return;
  }
  CHECK(am::msa::read_alignment_file(renamed) == plain);
  CHECK(am::msa::read_alignment_file(write(d, "two.gz", gz + gz)) == plain + plain);  // `cat a.gz b.gz`
  const am::msa::Alignment a = read(renamed);
  CHECK(a.format == "stockholm");
  CHECK(row(a, 1, kProtein) == "ACQDEFGKHI");
}

TEST_CASE("msa formats: CRLF line ends, blank lines, spaces inside sequences, a byte-order mark") {
  TempDir d("msa-crlf");
  const std::string f = write(d, "w.fa", "\xEF\xBB\xBF\r\n\r\n>a desc\r\nAC DE\r\n\r\nFG\r\n>b\r\nA-DEF\tG\r\n");
  const am::msa::Alignment a = read(f);
  CHECK(a.format == "fasta");
  REQUIRE(a.L == 6);
  CHECK(name_of(f, a, 0) == "a desc");
  CHECK(row(a, 0, kProtein) == "ACDEFG");
  CHECK(row(a, 1, kProtein) == "A-DEFG");
}

TEST_CASE("msa formats: a custom alphabet matches exactly, '.' only when it is a letter of it") {
  TempDir d("msa-custom");
  const std::string f = write(d, "c.fa", ">a\n01.1\n>b\n1.00\n>c\n0-10\n");
  const am::msa::Alignment a = read(f, "", ".01");
  CHECK(a.C == 3);
  CHECK(a.M == 2);  // c has '-', outside ".01"
  CHECK(row(a, 0, ".01") == "01.1");
  CHECK(row(a, 1, ".01") == "1.00");
}
