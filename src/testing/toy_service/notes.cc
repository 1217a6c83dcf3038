#include "testing/toy_service/notes.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "store/key.h"

namespace paddock::toy {
namespace {

constexpr std::string_view kNotes = "toy_notes";
constexpr std::string_view kCounts = "toy_note_counts";

std::string ScopeKey(const Scope& scope) { return store::Key().Str(scope.account.str()).Str(scope.region.str()).Done(); }

std::string NoteKey(const Scope& scope, const std::string& name) {
  return store::Key().Str(scope.account.str()).Str(scope.region.str()).Str(name).Done();
}

// "<version> <text>" -> (version, text).
StatusOr<Note> Decode(const std::string& name, const std::string& value) {
  Note n{name, "", 0};
  const size_t space = value.find(' ');
  auto [end, ec] = std::from_chars(value.data(), value.data() + std::min(space, value.size()), n.version);
  if (ec != std::errc() || space == std::string::npos) return DataLoss(fmt::format("toy note '{}' is corrupt", name));
  n.text = value.substr(space + 1);
  return n;
}

StatusOr<int64_t> Count(store::ReadTxn& txn, const Scope& scope) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kCounts, ScopeKey(scope)));
  if (!v) return int64_t{0};
  int64_t count = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), count);
  if (ec != std::errc()) return DataLoss("toy note count is corrupt");
  return count;
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"toy", [](int code) -> std::string_view {
                                         switch (static_cast<Error>(code)) {
                                           case Error::kNoteNotFound: return "NoteNotFound";
                                           case Error::kNoteLimitExceeded: return "NoteLimitExceeded";
                                         }
                                         return "?";
                                       }};
  return kDomain;
}

StatusOr<int64_t> Notes::Put(const Scope& scope, const std::string& name, const std::string& text) {
  int64_t version = 0;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto old, txn.Get(kNotes, NoteKey(scope, name)));
    if (old) {
      ASSIGN_OR_RETURN(Note n, Decode(name, *old));
      version = n.version + 1;
    } else {
      ASSIGN_OR_RETURN(int64_t count, Count(txn, scope));
      if (count >= kMaxNotesPerScope)
        return ResourceExhausted(fmt::format("You already have {} notes, the most allowed.", count),
                                 Error::kNoteLimitExceeded);
      RETURN_IF_ERROR(txn.Put(kCounts, ScopeKey(scope), std::to_string(count + 1)));
      version = 1;
    }
    return txn.Put(kNotes, NoteKey(scope, name), fmt::format("{} {}", version, text));
  }));
  return version;
}

StatusOr<Note> Notes::Get(const Scope& scope, const std::string& name) {
  std::optional<std::string> value;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(value, txn.Get(kNotes, NoteKey(scope, name)));
    return OkStatus();
  }));
  if (!value) return NotFound(fmt::format("No note named '{}' exists.", name), Error::kNoteNotFound);
  return Decode(name, *value);
}

}  // namespace paddock::toy
