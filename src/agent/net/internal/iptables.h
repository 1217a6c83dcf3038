// Runs iptables (Debian's iptables-nft here) for agent/net: one command at a time, or a batch
// through `iptables-restore --noflush` (applied atomically: all its lines or none). Every call
// waits for the xtables lock (-w) rather than failing on it.
//
//   RETURN_IF_ERROR(EnsureChain("nat", "PADDOCK-DNAT"));
//   RETURN_IF_ERROR(EnsureRule("nat", "PREROUTING", {"-m", "addrtype", ...}, Position::kFirst));
//   ASSIGN_OR_RETURN(std::vector<std::string> rules, ChainRules("nat", "PADDOCK-DNAT"));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::agent::net::internal {

// The absolute path of `iptables` (/usr/sbin, /sbin, /usr/bin, /bin), or "" when there is none.
const std::string& IptablesBinary();

// `iptables -w ARGS`; fails (quoting its stderr) when it cannot be run or exits non-zero.
Status Iptables(std::string_view what, const std::vector<std::string>& args);

// The rules of `chain` as `iptables -S` prints them ("-A CHAIN ..."), without the "-N"/"-P" line.
// kNotFound when the chain does not exist.
StatusOr<std::vector<std::string>> ChainRules(const std::string& table, const std::string& chain);

// The policy of a built-in chain ("ACCEPT", "DROP").
StatusOr<std::string> ChainPolicy(const std::string& table, const std::string& chain);

// Creates the chain when it does not exist.
Status EnsureChain(const std::string& table, const std::string& chain);

enum class Position { kFirst, kLast };

// Adds the rule (`-A`/`-I 1` CHAIN spec) unless an identical one is there (`-C`).
Status EnsureRule(const std::string& table, const std::string& chain, const std::vector<std::string>& spec,
                  Position position);

// Deletes every rule of `chain` that is in `rules` (lines as ChainRules gives them), in one
// atomic batch. Rules already gone are skipped (the chain is read again first).
Status DeleteRules(const std::string& table, const std::string& chain, const std::vector<std::string>& rules);

// Applies `lines` (rule commands such as "-A CHAIN ...") to `table` atomically.
Status RestoreNoFlush(std::string_view what, const std::string& table, const std::vector<std::string>& lines);

// The words of a rule line as iptables -S prints it: split on blanks, "double quoted" words kept
// whole (and unquoted).
std::vector<std::string> SplitRule(std::string_view line);

}  // namespace paddock::agent::net::internal
