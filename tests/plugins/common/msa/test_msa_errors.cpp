// Every bad input of the msa task is a clear error (status and a message naming the file and the record), never
// a crash or a hang.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <random>

#include "msa_test_util.hpp"

using namespace msa_test;

TEST_CASE("msa errors: the file system (missing, a directory, a FIFO, no file given)") {
  TempDir d("msa-fs");
  const std::string missing = (d.path / "nope.a2m").string();
  expect_error([&] { am::msa::read_alignment_file(missing); }, AM_ERR_IO, {missing, "cannot open"});
  expect_error([&] { am::msa::read_alignment_file(d.path.string()); }, AM_ERR_FORMAT, {"is a directory"});
  const std::string fifo = (d.path / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_error([&] { am::msa::read_alignment_file(fifo); }, AM_ERR_FORMAT, {fifo, "is a FIFO"});  // no hang
  expect_error([&] { am::msa::read_alignment_file(""); }, AM_ERR_USAGE, {"'file' is required"});
}

TEST_CASE("msa errors: empty files and files without records") {
  TempDir d("msa-empty");
  for (const char *text : {"", "\n\n  \n", "\r\n"}) {
    const std::string f = write(d, "e.fa", text);
    expect_error([&] { read(f); }, AM_ERR_FORMAT, {f, "empty file"});
  }
  const std::string sto = write(d, "e.sto", "# STOCKHOLM 1.0\n#=GF ID x\n//\n");
  expect_error([&] { read(sto); }, AM_ERR_FORMAT, {sto, "no sequences"});
  const std::string nocols = write(d, "n.fa", ">a\n>b\n");
  expect_error([&] { read(nocols); }, AM_ERR_FORMAT, {nocols, "empty (no columns)"});
}

TEST_CASE("msa errors: a ragged alignment names the record, its line and both lengths") {
  TempDir d("msa-ragged");
  const std::string f = write(d, "r.fa", ">first\nACDEF\n>second\nACDEF\n>third one\nACDE\n");
  expect_error([&] { read(f); }, AM_ERR_FORMAT, {f, "'third one'", "line 5", "4 columns", "'first' has 5"});
  const std::string sto = write(d, "r.sto", "# STOCKHOLM 1.0\na ACD\nb ACDE\n//\n");
  expect_error([&] { read(sto); }, AM_ERR_FORMAT, {sto, "'b'", "line 3", "4 columns", "'a' has 3"});
  // rows that differ without their insert letters too: not A3M either
  const std::string a3m = write(d, "r.a3m", ">q\nACDEF\n>h\nACkDEFG\n");
  expect_error([&] { read(a3m); }, AM_ERR_FORMAT, {"'h'", "A3M"});
}

TEST_CASE("msa errors: binary garbage and text that is no alignment") {
  TempDir d("msa-bin");
  const std::string png = write(d, "x.a2m", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  expect_error([&] { read(png); }, AM_ERR_FORMAT, {png, "binary data", "byte 0x1a", "line 2"});
  std::mt19937 gen(7);
  std::string noise(4096, '\0');
  for (char &c : noise) c = static_cast<char>(gen() & 0xff);
  noise[0] = '>';
  const std::string rnd = write(d, "noise.fa", noise);
  expect_error([&] { read(rnd); }, AM_ERR_FORMAT, {rnd, "binary data"});
  const std::string text = write(d, "t.fa", "hello world\n>a\nAC\n");
  expect_error([&] { read(text); }, AM_ERR_FORMAT, {text, "not an alignment", "line 1", "'hello world'"});
  const std::string gz = write(d, "t.gz", "\x1f\x8b\x08\x00garbage that is no deflate stream");
  expect_error([&] { read(gz); }, AM_ERR_FORMAT, {gz, am::msa::gzip_supported() ? "gzip" : "zlib"});
  if (am::msa::gzip_supported()) {
    const std::string full = am_test::slurp(fixture("interleaved.sto.gz"));
    const std::string cut = write(d, "cut.gz", full.substr(0, full.size() / 2));
    expect_error([&] { read(cut); }, AM_ERR_FORMAT, {cut, "truncated gzip"});
  }
}

TEST_CASE("msa errors: Stockholm lines without a sequence, a second alignment after '//'") {
  TempDir d("msa-sto");
  const std::string f = write(d, "a.sto", "# STOCKHOLM 1.0\nseq1 ACD\nseq2\n//\n");
  expect_error([&] { read(f); }, AM_ERR_FORMAT, {f, "line 3", "'seq2' has no sequence"});
  const std::string two = write(d, "b.sto", "# STOCKHOLM 1.0\na AC\nb AD\n//\n# STOCKHOLM 1.0\nc AC\n//\n");
  expect_error([&] { read(two); }, AM_ERR_FORMAT, {two, "line 5", "one alignment per file"});
}

TEST_CASE("msa errors: unknown focus id, focus with letters outside the alphabet") {
  expect_error([&] { read(fixture("focus.a2m"), "DYR_ECOLI"); }, AM_ERR_USAGE,
               {"focus.a2m", "'DYR_ECOLI'", "5 records", "FOC_HUMAN/10-17"});
  expect_error([&] { read(fixture("focus.a2m"), "s4"); }, AM_ERR_FORMAT,
               {"focus sequence 's4 has B", "'B' at column 3", "outside the alphabet"});
}

TEST_CASE("msa errors: fewer than 2 sequences or 2 sites left") {
  TempDir d("msa-small");
  const std::string one = write(d, "one.fa", ">only\nACDE\n");
  expect_error([&] { read(one); }, AM_ERR_FORMAT, {one, "1 of 1 sequences", "at least 2"});
  const std::string dropped = write(d, "d.fa", ">a\nACDE\n>b\nAC1E\n>c\nXCDE\n");
  expect_error([&] { read(dropped); }, AM_ERR_FORMAT, {"1 of 3 sequences", "dropping 2", "b: '1' at column 3"});
  const std::string rna = write(d, "r.fa", ">a\nACGU\n>b\nACGU\n");  // protein reads "U" as outside
  expect_error([&] { read(rna); }, AM_ERR_FORMAT, {"is the alphabet right?"});
  const std::string site = write(d, "s.fa", ">f\n-a-C\n>g\nAAAC\n");  // the focus has one residue
  expect_error([&] { read(site, "f"); }, AM_ERR_FORMAT, {site, "1 of 4 columns", "focus 'f'", "at least 2 sites"});
}

TEST_CASE("msa errors: bad alphabets are usage errors") {
  expect_error([] { am::msa::make_alphabet("ACA"); }, AM_ERR_USAGE, {"'A' given twice"});
  expect_error([] { am::msa::make_alphabet("acgu"); }, AM_ERR_USAGE, {"'a' not allowed", "lowercase"});
  expect_error([] { am::msa::make_alphabet("A"); }, AM_ERR_USAGE, {"2 to 127 letters"});
  expect_error([] { am::msa::make_alphabet("A C"); }, AM_ERR_USAGE, {"' ' not allowed"});
  expect_error([] { am::msa::make_alphabet("AB>"); }, AM_ERR_USAGE, {"'>' not allowed"});
}
