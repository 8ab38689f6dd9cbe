// The generated man page attnmech(1) and bash completion script against the CLI's option table: every row of
// run, sweep and figure is in the command's section of the page with its exact label and help, and every
// spelling (name and alias) is among the command's completions; every command of the main help is in both.
// MAN_PAGE and COMPLETION are the build's generated files (tools/attnmech.1, tools/completion/attnmech).
#include <doctest/doctest.h>

#include "cli_options.hpp"  // tools/: the option table

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using am::cli::Command;

std::vector<std::string> read_lines(const char *path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  return lines;
}

// roff back to text: escapes (\-, \e, \&) and font changes (\fB, \fI, \fR).
std::string unroff(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == '-') out += '-';
    else if (c == 'e') out += '\\';
    else if (c == 'f' && i + 1 < s.size()) ++i;  // \fB, \fI, \fR
    else if (c != '&') out += std::string("\\") + c;
  }
  return out;
}

// The .TP entries of one .SS section of the page: label → help (lines joined by '\n').
std::map<std::string, std::string> section_options(const std::vector<std::string> &page, const std::string &ss) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < page.size() && page[i].rfind(".SS \"" + ss, 0) != 0) ++i;
  REQUIRE_MESSAGE(i < page.size(), "no section .SS \"" << ss << "...\" in the man page");
  for (++i; i < page.size() && page[i].rfind(".SS", 0) != 0 && page[i].rfind(".SH", 0) != 0; ++i) {
    if (page[i] != ".TP" || i + 1 >= page.size()) continue;
    const std::string label = unroff(page[++i]);
    std::string help;
    while (i + 1 < page.size() && page[i + 1][0] != '.') help += (help.empty() ? "" : "\n") + unroff(page[++i]);
    out[label] = help;
  }
  return out;
}

// The completion words of one command: the `compgen -W "..."` of its case branch.
std::set<std::string> completion_options(const std::vector<std::string> &script, const std::string &cmd) {
  size_t i = 0;
  while (i < script.size() && script[i] != "    " + cmd + ")") ++i;
  REQUIRE_MESSAGE(i < script.size(), "no case branch for " << cmd << " in the completion script");
  for (; i < script.size(); ++i) {  // the options' line: an option argument's words (--plots LIST) come first
    const size_t w = script[i].find("compgen -W \"-");
    if (w == std::string::npos) continue;
    std::istringstream words(script[i].substr(w + 12, script[i].find('"', w + 12) - w - 12));
    std::set<std::string> out;
    for (std::string s; words >> s;) out.insert(s);
    return out;
  }
  FAIL("no compgen -W line for " << cmd);
  return {};
}

const std::pair<Command, const char *> kTableCommands[] = {
    {am::cli::CMD_RUN, "run"}, {am::cli::CMD_SWEEP, "sweep"}, {am::cli::CMD_FIGURE, "figure"}};

}  // namespace

TEST_CASE("the man page has every row of the option table: label and help, in its command's section") {
  const std::vector<std::string> page = read_lines(MAN_PAGE);
  REQUIRE(!page.empty());
  CHECK(page[1].rfind(".TH ATTNMECH 1 ", 0) == 0);
  size_t rows = 0;
  for (const auto &[cmd, word] : kTableCommands) {
    const auto options = section_options(page, std::string("attnmech ") + word);
    CHECK(options.size() == am::cli::option_rows(cmd).size());
    for (const am::cli::OptionRow *r : am::cli::option_rows(cmd)) {
      const std::string label = am::cli::option_label(*r);
      INFO(word << " " << label);
      REQUIRE(options.count(label) == 1);
      CHECK(options.at(label) == r->help);
      ++rows;
    }
  }
  CHECK(rows >= 25);  // the table has 29 rows today (some commands share a spelling with different help)
  // Every command of the main help has its section and its line in SYNOPSIS and COMMANDS.
  std::string text;
  for (const std::string &l : page) text += unroff(l) + "\n";
  for (const char *w : {"list", "run", "help", "plot", "sweep", "figure"}) {
    INFO(w);
    CHECK(text.find(std::string(".SS \"attnmech ") + w) != std::string::npos);
    CHECK(text.find(std::string("attnmech ") + w + " ") != std::string::npos);
    CHECK(text.find(std::string(".TP\n") + w) != std::string::npos);
  }
  for (const char *s : {".SH SYNOPSIS", ".SH DESCRIPTION", ".SH COMMANDS", ".SH OPTIONS", ".SH EXIT STATUS",
                        ".SH PLUGIN PARAMETERS", ".SH ENVIRONMENT", "AM_PLUGIN_PATH", "attnmech help NAME"})
    CHECK_MESSAGE(text.find(s) != std::string::npos, s);
}

TEST_CASE("the completion script offers every spelling of the option table for its command, and the commands") {
  const std::vector<std::string> script = read_lines(COMPLETION);
  for (const auto &[cmd, word] : kTableCommands) {
    const std::set<std::string> offered = completion_options(script, word);
    std::set<std::string> table = {"--help"};
    for (const am::cli::OptionRow *r : am::cli::option_rows(cmd)) {
      table.insert(r->name);
      if (r->alias) table.insert(r->alias);
    }
    CHECK_MESSAGE(offered == table, word);
  }
  bool commands = false;
  for (const std::string &l : script)
    commands = commands || l == "_attnmech_commands=\"list run help plot sweep figure\"";
  CHECK(commands);
}
