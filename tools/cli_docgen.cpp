// attnmech CLI — the man page attnmech(1) and the bash completion script, generated from what `--help` shows:
// the command list of the main help, each command's help text (usage lines, description, closing notes) and
// its options — for run, sweep and figure the rows of the option table (cli_options.cpp), for list, help and
// plot the options section of their fixed help. Built at build time (`attnmech help --man`,
// `attnmech help --completion bash`; tools/meson.build) and installed to share/man/man1 and
// share/bash-completion/completions. Plugin parameters are known only at run time: the page says where to look.
#include "cli.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace am::cli {

namespace {

// One option as the man page and the completion need it: its spellings, its argument ("" for a flag), its help.
struct DocOption {
  std::vector<std::string> names;  // "--out", "-o"
  std::string arg;                 // "DIR"
  std::string help;                // lines joined by '\n'
};

// A command's help text, cut into its parts.
struct CommandDoc {
  std::string word;
  std::vector<std::string> usage;  // "attnmech run [NAME] [--estimator NAME] ...", continuation lines joined
  std::string about, after;        // paragraphs ('\n' between lines, "\n\n" between paragraphs)
  std::vector<DocOption> options;
};

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

size_t leading_spaces(const std::string &l) {
  const size_t n = l.find_first_not_of(' ');
  return n == std::string::npos ? l.size() : n;
}

// "  --out, -o DIR   help…" rows of an options section (continuation lines are indented past the label).
std::vector<DocOption> parse_options(const std::vector<std::string> &lines, size_t from, size_t to) {
  std::vector<DocOption> out;
  for (size_t i = from; i < to; ++i) {
    const std::string &l = lines[i];
    if (leading_spaces(l) > 2 && !out.empty()) {
      out.back().help += (out.back().help.empty() ? "" : "\n") + l.substr(leading_spaces(l));
      continue;
    }
    const size_t gap = l.find("  ", 2);
    DocOption o;
    std::istringstream label(l.substr(2, gap == std::string::npos ? std::string::npos : gap - 2));
    for (std::string w; label >> w;) {
      if (w.back() == ',') w.pop_back();
      (w[0] == '-' ? o.names.push_back(w) : void(o.arg = w));
    }
    if (gap != std::string::npos) o.help = l.substr(leading_spaces(l.substr(gap)) + gap);
    out.push_back(o);
  }
  return out;
}

std::vector<DocOption> table_options(Command cmd) {
  std::vector<DocOption> out;
  for (const OptionRow *r : option_rows(cmd)) {
    DocOption o{{r->name}, r->arg ? r->arg : "", r->help};
    if (r->alias) o.names.push_back(r->alias);
    out.push_back(o);
  }
  return out;
}

// Usage lines (the first and those indented under it), the description, the options section, what follows.
CommandDoc parse_command(const std::string &word) {
  CommandDoc d;
  d.word = word;
  const char *help = command_help(word);
  if (!help) return d;  // a command of the main help without its own --help: its name and summary only
  const std::vector<std::string> lines = split_lines(help);
  size_t i = 0;
  for (; i < lines.size() && !lines[i].empty(); ++i) {
    const std::string l = lines[i].substr(leading_spaces(lines[i]));
    if (l.rfind("usage: ", 0) == 0) d.usage.push_back(l.substr(7));
    else if (l.rfind("attnmech ", 0) == 0 || l.rfind("mpirun ", 0) == 0) d.usage.push_back(l);
    else if (!d.usage.empty()) d.usage.back() += " " + l;  // a wrapped usage line
  }
  size_t opt = i;
  while (opt < lines.size() && lines[opt] != "options:") ++opt;
  size_t opt_end = opt + 1;
  while (opt_end < lines.size() && !lines[opt_end].empty()) ++opt_end;
  for (size_t k = i + 1; k < opt; ++k) d.about += lines[k] + "\n";
  for (size_t k = opt_end + 1; k < lines.size(); ++k) d.after += lines[k] + "\n";
  for (std::string *t : {&d.about, &d.after})  // no blank line at the end: a paragraph break before nothing
    while (t->size() >= 2 && t->compare(t->size() - 2, 2, "\n\n") == 0) t->pop_back();
  const Command table_cmd = word == "run" ? CMD_RUN : word == "sweep" ? CMD_SWEEP : word == "figure" ? CMD_FIGURE : Command(0);
  d.options = table_cmd ? table_options(table_cmd) : opt < lines.size() ? parse_options(lines, opt + 1, opt_end)
                                                                         : std::vector<DocOption>{};
  return d;
}

// The main help's "commands:" rows: word and summary (continuation lines joined).
std::vector<std::pair<std::string, std::string>> command_summaries() {
  const std::vector<std::string> lines = split_lines(kMainHelp);
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < lines.size() && lines[i] != "commands:") ++i;
  for (++i; i < lines.size() && !lines[i].empty(); ++i) {
    const std::string &l = lines[i];
    if (leading_spaces(l) > 2 && !out.empty()) {
      out.back().second += " " + l.substr(leading_spaces(l));
      continue;
    }
    const size_t gap = l.find("  ", 2), text = l.find_first_not_of(' ', gap);
    out.push_back({l.substr(2, gap == std::string::npos ? gap : gap - 2), text == std::string::npos ? "" : l.substr(text)});
  }
  return out;
}

// The command words, in the main help's order: "list", "run", ...
std::vector<std::string> command_words() {
  std::vector<std::string> words;
  for (const auto &c : command_summaries()) words.push_back(c.first.substr(0, c.first.find(' ')));
  return words;
}

// roff text: backslashes, hyphens (ASCII in option names when rendered), control characters at line starts.
std::string roff(const std::string &s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

// Paragraphs of help text: lines joined (roff fills them), a blank line starts a new paragraph.
std::string roff_paragraphs(const std::string &text) {
  std::string out;
  for (const std::string &l : split_lines(text)) out += l.empty() ? ".PP\n" : roff(l) + "\n";
  return out;
}

// A usage form as a filled paragraph hanging 4 columns, broken only between bracketed groups: "[--set key=value]"
// stays on one line.
std::string roff_usage(const std::string &form, const std::string &bold_prefix) {
  std::string rest;
  int depth = 0;
  for (char c : form.substr(bold_prefix.size())) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ' ' && !rest.empty() && rest.back() == ' ') continue;  // aligned columns: one space in filled text
    rest += c == ' ' && depth > 0 ? '\x01' : c;  // a space inside brackets: unbreakable, "\ " once escaped
  }
  rest = roff(rest);
  std::string out = ".in +4n\n.ti -4n\n\\fB" + roff(bold_prefix) + "\\fR";
  for (char c : rest) out += c == '\x01' ? std::string("\\ ") : std::string(1, c);
  return out + "\n.in -4n\n";
}

std::string roff_option(const DocOption &o) {
  std::string out = ".TP\n";
  for (size_t i = 0; i < o.names.size(); ++i) out += (i ? ", " : "") + std::string("\\fB") + roff(o.names[i]) + "\\fR";
  if (!o.arg.empty()) out += " \\fI" + roff(o.arg) + "\\fR";
  return out + "\n" + roff(o.help) + "\n";
}

std::string roff_command(const CommandDoc &d) {
  std::string out = ".SS \"" + roff(d.usage.empty() ? d.word : d.usage[0].substr(0, d.usage[0].find(" [--"))) + "\"\n";
  out += ".PD 0\n";
  for (const std::string &u : d.usage) out += ".PP\n" + roff_usage(u, u.rfind("mpirun ", 0) == 0 ? "mpirun" : "attnmech " + d.word);
  out += ".PD\n.PP\n" + roff_paragraphs(d.about);
  if (!d.options.empty()) out += ".PP\nOptions:\n.RS\n";
  for (const DocOption &o : d.options) out += roff_option(o);
  if (!d.options.empty()) out += ".RE\n";
  return out + (d.after.empty() ? "" : ".PP\n" + roff_paragraphs(d.after));
}

const char *const kManTail =
    ".SH PLUGIN PARAMETERS\n"
    "Tasks and estimators are plugins found at run time, so their parameters (\\fB\\-\\-set\\fR \\fIkey=value\\fR)\n"
    "are not listed here: \\fBattnmech list\\fR shows the plugins found and where it searched,\n"
    "\\fBattnmech help\\fR \\fINAME\\fR a plugin's parameter table (name, type, default, range, help).\n"
    "Host keys every run accepts: \\fBseed\\fR, \\fBthreads\\fR, \\fBwidths\\fR.\n"
    ".SH ENVIRONMENT\n";

// After the main help's environment rows: a knob for benchmarks and debugging, the files, see also.
const char *const kManFiles =
    ".TP\n\\fBAM_SIMD\\fR\n"
    "Force a SIMD kernel set by name prefix (e.g. \\fBscalar\\fR, \\fBsse2\\fR, \\fBavx2\\fR) instead of the best\n"
    "one the CPU supports.\n"
    ".SH FILES\n"
    ".TP\n\\fI<libdir>/attnmech\\-plugins\\-<ABI>/\\fR\n"
    "The installed plugins, next to the library.\n"
    ".TP\n\\fI<prefix>/share/attnmech/sweeps/\\fR, \\fI<prefix>/share/attnmech/figures/\\fR\n"
    "The shipped sweep specs and figure specs.\n"
    ".SH SEE ALSO\n"
    "\\fBmpirun\\fR(1), \\fBpkg\\-config\\fR(1); the documentation in the source tree: docs/cli.md,\n"
    "docs/sweep.md, docs/figures.md.\n";

// ---- bash completion

// What a command's operand completes to (the script's helpers below): plugin names, figures, files, dirs.
const char *operand_completion(const std::string &word) {
  if (word == "run") return "_attnmech_plugins tasks standalone";  // tasks, and estimators that need no task
  if (word == "help") return "_attnmech_plugins tasks estimators; compgen -W \"$_attnmech_commands\" -- \"$cur\"";
  if (word == "figure") return "_attnmech_figures; compgen -f -X '!*.json' -- \"$cur\"; compgen -d -- \"$cur\"";
  if (word == "sweep") return "_attnmech_sweeps; compgen -f -X '!*.json' -- \"$cur\"; compgen -d -- \"$cur\"";
  if (word == "plot") return "compgen -d -- \"$cur\"";
  return "";
}

// What an option's argument completes to, by its metavariable: DIR a directory, FILE a file, NAME after
// --estimator the estimators found, LIST after --plots the plot formats; nothing for values (key=value, N, k/n).
std::string argument_completion(const DocOption &o) {
  if (o.arg == "DIR") return "compgen -d -- \"$cur\"";
  if (o.arg == "LIST" && o.names[0] == "--plots") return "compgen -W \"svg pdf png all svg,pdf svg,png svg,pdf,png\" -- \"$cur\"";
  if (o.arg == "FILE") return "compgen -f -- \"$cur\"";
  if (o.arg == "NAME" && o.names[0] == "--estimator") return "_attnmech_plugins estimators";
  return "";
}

// The helpers: plugin names from `attnmech list` (with the --plugin files of the line), the shipped figures from
// `attnmech figure --list` and the shipped sweep specs from `attnmech sweep --list`, all asked at completion time so
// that AM_PLUGIN_PATH and user plugins count. Kinds: tasks, estimators, standalone (the estimators whose data kinds
// include none: `run NAME` runs them without a task).
const char *const kCompletionHelpers =
    "_attnmech_plugins() {  # tasks, estimators and/or standalone estimators as `attnmech list` prints them, by $cur\n"
    "  local want=\" $* \" plugins=() i\n"
    "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    "    [[ ${COMP_WORDS[i]} == --plugin && -n ${COMP_WORDS[i + 1]} ]] && plugins+=(--plugin \"${COMP_WORDS[i + 1]}\")\n"
    "  done\n"
    "  \"$_attnmech_exe\" list \"${plugins[@]}\" 2>/dev/null |\n"
    "    awk -v want=\"$want\" '/^[a-z]+:$/ { kind = substr($1, 1, length($1) - 1); next } /^[^ ]/ { kind = \"\" }\n"
    "      kind == \"\" || $1 == \"(none)\" { next }\n"
    "      index(want, \" \" kind \" \") || (kind == \"estimators\" && index(want, \" standalone \") &&\n"
    "        index($0, \"none (runs without a task)\")) { print $1 }' |\n"
    "    while read -r name; do [[ $name == \"$cur\"* ]] && printf '%s\\n' \"$name\"; done\n"
    "}\n"
    "_attnmech_figures() {  # the shipped figures, first column of `attnmech figure --list`\n"
    "  \"$_attnmech_exe\" figure --list 2>/dev/null | awk 'NR > 1 && !/^\\(/ { print $1 }' |\n"
    "    while read -r name; do [[ $name == \"$cur\"* ]] && printf '%s\\n' \"$name\"; done\n"
    "}\n"
    "_attnmech_sweeps() {  # the shipped sweep specs, first column of `attnmech sweep --list`\n"
    "  \"$_attnmech_exe\" sweep --list 2>/dev/null | awk 'NR > 1 && !/^\\(/ { print $1 }' |\n"
    "    while read -r name; do [[ $name == \"$cur\"* ]] && printf '%s\\n' \"$name\"; done\n"
    "}\n";

// One command's branch of the script: option arguments by the previous word, options, the operand.
std::string completion_case(const CommandDoc &d) {
  std::string opts = " ", args;  // opts: " --out -o --set ... "
  for (const DocOption &o : d.options) {
    std::string pattern;
    for (const std::string &n : o.names) {
      if (opts.find(" " + n + " ") == std::string::npos) opts += n + " ";
      pattern += (pattern.empty() ? "" : "|") + n;
    }
    const std::string action = argument_completion(o);  // one candidate a line: names with spaces stay whole
    if (!o.arg.empty() && args.find(pattern + ")") == std::string::npos)
      args += "        " + pattern + ") " + (action.empty() ? "" : "mapfile -t COMPREPLY < <(" + action + "); ") + "return ;;\n";
  }
  if (opts.find(" --help ") == std::string::npos) opts += "--help ";
  std::string out = "    " + d.word + ")\n      case $prev in\n" + args + "      esac\n";
  out += "      if [[ $cur == -* ]]; then\n        mapfile -t COMPREPLY < <(compgen -W \"" + am::text::trim(opts) + "\" -- \"$cur\")\n";
  const std::string operand = operand_completion(d.word);
  if (!operand.empty()) out += "      else\n        mapfile -t COMPREPLY < <(" + operand + ")\n";
  return out + "      fi ;;\n";
}

}  // namespace

std::string bash_completion() {
  std::string words;
  for (const std::string &w : command_words()) words += (words.empty() ? "" : " ") + w;
  std::string out = "# shellcheck shell=bash\n# bash completion for attnmech(1): commands, their options (the CLI's option table), option\n"
                    "# arguments (directories, files, estimators) and operands (tasks, figures, sweep specs, directories).\n"
                    "# Generated by `attnmech help --completion bash`; plugin, figure and sweep names come from\n"
                    "# `attnmech list`, `attnmech figure --list` and `attnmech sweep --list` at completion time.\n";
  out += "_attnmech_commands=\"" + words + "\"\n" + kCompletionHelpers;
  out += "_attnmech() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
         "  local _attnmech_exe=${COMP_WORDS[0]}\n"
         "  case $_attnmech_exe in \\~/*) _attnmech_exe=$HOME/${_attnmech_exe:2} ;; esac  # typed as ~/...: not expanded\n"
         "  COMPREPLY=()\n"
         "  if ((COMP_CWORD == 1)); then\n"
         "    mapfile -t COMPREPLY < <(compgen -W \"$_attnmech_commands --help -h --version\" -- \"$cur\")\n"
         "    return\n"
         "  fi\n"
         "  case ${COMP_WORDS[1]} in\n";
  for (const std::string &w : command_words()) out += completion_case(parse_command(w));
  return out + "  esac\n}\ncomplete -F _attnmech -o filenames attnmech\n";
}

std::string man_page(const char *version) {
  const std::vector<std::string> main = split_lines(kMainHelp);
  std::string out = ".\\\" attnmech(1), generated by `attnmech help --man` from the CLI's help and option table.\n";
  out += ".TH ATTNMECH 1 \"\" \"attnmech " + roff(version) + "\" \"User Commands\"\n";
  out += ".ad l\n.nh\n";  // ragged right, no hyphenation: option names stay whole
  out += ".SH NAME\nattnmech \\- statistical mechanics of attention networks\n.SH SYNOPSIS\n.PD 0\n";
  for (const std::string &w : command_words()) {
    const CommandDoc d = parse_command(w);
    out += ".PP\n" + roff_usage(d.usage.empty() ? "attnmech " + w : d.usage[0], "attnmech " + w);
  }
  out += ".PP\n\\fBattnmech\\fR \\-\\-help | \\-\\-version\n.PD\n.SH DESCRIPTION\n";
  for (size_t i = 2; i < main.size() && !main[i].empty(); ++i) out += roff(main[i]) + "\n";
  out += ".SH COMMANDS\n";
  for (const auto &c : command_summaries()) out += ".TP\n\\fB" + roff(c.first) + "\\fR\n" + roff(c.second) + "\n";
  for (const std::string &w : command_words()) out += roff_command(parse_command(w));
  out += ".SH OPTIONS\n";
  size_t opt = 0;
  while (opt < main.size() && main[opt] != "options:") ++opt;
  size_t end = opt + 1;
  while (end < main.size() && !main[end].empty()) ++end;
  for (const DocOption &o : parse_options(main, opt + 1, end)) out += roff_option(o);
  out += ".SH EXIT STATUS\n";
  size_t env = end + 1;
  for (; env < main.size() && main[env] != "environment:"; ++env)
    if (!main[env].empty()) out += roff(main[env]) + "\n";
  out += kManTail;
  for (DocOption o : parse_options(main, std::min(env + 1, main.size()), main.size())) {
    o.names = {o.arg};  // a variable's name, shown like an option's
    o.arg.clear();
    out += roff_option(o);
  }
  return out + kManFiles;
}

}  // namespace am::cli
