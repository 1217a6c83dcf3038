#include "agent/net/internal/iptables.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "agent/net/internal/command.h"

namespace paddock::agent::net::internal {
namespace {

std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(no message)" : text;
}

std::string RestoreBinary() {
  const std::string& iptables = IptablesBinary();
  if (iptables.empty()) return {};
  return iptables + "-restore";
}

StatusOr<CommandResult> Run(std::string_view what, std::vector<std::string> args) {
  if (IptablesBinary().empty()) return FailedPrecondition(fmt::format("{}: iptables is not installed", what));
  args.insert(args.begin(), {IptablesBinary(), "-w"});
  StatusOr<CommandResult> r = RunCommand(args, "");
  if (!r.ok()) return Status(r.status().code(), fmt::format("{}: {}", what, r.status().message()));
  return r;
}

}  // namespace

const std::string& IptablesBinary() {
  static const std::string path = [] {
    for (const char* candidate : {"/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables", "/bin/iptables"}) {
      if (access(candidate, X_OK) == 0) return std::string(candidate);
    }
    return std::string();
  }();
  return path;
}

Status Iptables(std::string_view what, const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(CommandResult r, Run(what, args));
  if (r.exit_code != 0) return Internal(fmt::format("{}: iptables exited with {}: {}", what, r.exit_code, OneLine(r.err)));
  return OkStatus();
}

namespace {

// `iptables -S` of the whole table, by lines. (Listing one chain cannot tell a missing chain from
// a broken one: iptables-nft 1.8.9 calls both "incompatible".)
StatusOr<std::vector<std::string>> TableLines(const std::string& table) {
  std::string what = fmt::format("listing iptables table {}", table);
  ASSIGN_OR_RETURN(CommandResult r, Run(what, {"-t", table, "-S"}));
  if (r.exit_code != 0) return Internal(fmt::format("{}: iptables exited with {}: {}", what, r.exit_code, OneLine(r.err)));
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t eol = r.out.find('\n', pos);
    if (eol == std::string::npos) eol = r.out.size();
    lines.push_back(r.out.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return lines;
}

}  // namespace

StatusOr<std::vector<std::string>> ChainRules(const std::string& table, const std::string& chain) {
  ASSIGN_OR_RETURN(std::vector<std::string> lines, TableLines(table));
  bool exists = false;
  std::vector<std::string> rules;
  for (std::string& line : lines) {
    if (line == "-N " + chain || line.starts_with("-P " + chain + " ")) exists = true;
    if (line.starts_with("-A " + chain + " ")) rules.push_back(std::move(line));
  }
  if (!exists) return NotFound(fmt::format("iptables table {} has no chain {}", table, chain));
  return rules;
}

StatusOr<std::string> ChainPolicy(const std::string& table, const std::string& chain) {
  ASSIGN_OR_RETURN(std::vector<std::string> lines, TableLines(table));
  std::string prefix = fmt::format("-P {} ", chain);
  for (const std::string& line : lines) {
    if (line.starts_with(prefix)) return line.substr(prefix.size());
  }
  return Internal(fmt::format("iptables table {} shows no policy for chain {}", table, chain));
}

Status EnsureChain(const std::string& table, const std::string& chain) {
  StatusOr<std::vector<std::string>> rules = ChainRules(table, chain);
  if (rules.ok()) return OkStatus();
  if (rules.status().code() != StatusCode::kNotFound) return rules.status();
  Status s = Iptables(fmt::format("creating iptables chain {} in table {}", chain, table), {"-t", table, "-N", chain});
  // Created meanwhile by someone else: fine.
  if (!s.ok() && ChainRules(table, chain).ok()) return OkStatus();
  return s;
}

Status EnsureRule(const std::string& table, const std::string& chain, const std::vector<std::string>& spec,
                  Position position) {
  std::string what = fmt::format("adding an iptables rule to {} in table {}", chain, table);
  std::vector<std::string> check = {"-t", table, "-C", chain};
  check.insert(check.end(), spec.begin(), spec.end());
  ASSIGN_OR_RETURN(CommandResult r, Run(what, check));
  if (r.exit_code == 0) return OkStatus();
  std::vector<std::string> add = {"-t", table};
  if (position == Position::kFirst) {
    add.insert(add.end(), {"-I", chain, "1"});
  } else {
    add.insert(add.end(), {"-A", chain});
  }
  add.insert(add.end(), spec.begin(), spec.end());
  return Iptables(what, add);
}

Status RestoreNoFlush(std::string_view what, const std::string& table, const std::vector<std::string>& lines) {
  if (lines.empty()) return OkStatus();
  std::string restore = RestoreBinary();
  if (restore.empty()) return FailedPrecondition(fmt::format("{}: iptables is not installed", what));
  std::string input = "*" + table + "\n";
  for (const std::string& line : lines) input += line + "\n";
  input += "COMMIT\n";
  StatusOr<CommandResult> r = RunCommand({restore, "-w", "--noflush"}, input);
  if (!r.ok()) return Status(r.status().code(), fmt::format("{}: {}", what, r.status().message()));
  if (r->exit_code != 0) {
    return Internal(fmt::format("{}: iptables-restore exited with {}: {}", what, r->exit_code, OneLine(r->err)));
  }
  return OkStatus();
}

Status DeleteRules(const std::string& table, const std::string& chain, const std::vector<std::string>& rules) {
  std::string what = fmt::format("deleting rules from iptables chain {} of table {}", chain, table);
  // Two tries: a rule deleted by someone else between the listing and the batch fails the batch.
  for (int attempt = 0;; ++attempt) {
    StatusOr<std::vector<std::string>> current = ChainRules(table, chain);
    if (!current.ok() && current.status().code() == StatusCode::kNotFound) return OkStatus();
    if (!current.ok()) return current.status();
    std::vector<std::string> lines;
    for (const std::string& rule : rules) {
      if (std::find(current->begin(), current->end(), rule) != current->end()) lines.push_back("-D" + rule.substr(2));
    }
    Status s = RestoreNoFlush(what, table, lines);
    if (s.ok() || attempt == 1) return s;
  }
}

std::vector<std::string> SplitRule(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    std::string word;
    if (line[i] == '"') {
      ++i;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        word += line[i++];
      }
      ++i;  // the closing quote
    } else {
      while (i < line.size() && line[i] != ' ') word += line[i++];
    }
    words.push_back(std::move(word));
  }
  return words;
}

}  // namespace paddock::agent::net::internal
