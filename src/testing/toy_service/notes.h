// The toy service's owner: named notes per (account, region), each with a version that counts
// its writes. It exists to prove the shape every service module takes (docs/architecture.md,
// "Adding a service"): an owner over its own tables (schema.h) that speaks typed values, and an
// api/ adapter (api/toy_service.h) that alone knows the wire format and AWS's error names.
//
//   toy::Notes notes(store);
//   ASSIGN_OR_RETURN(int64_t version, notes.Put(scope, "todo", "water the plants"));
//   ASSIGN_OR_RETURN(toy::Note n, notes.Get(scope, "todo"));
#pragma once

#include <cstdint>
#include <string>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::toy {

// The toy's failures, in its own vocabulary; the adapter's table names them on the wire.
enum class Error {
  kNoteNotFound = 1,   // Get of a name the scope does not hold
  kNoteLimitExceeded,  // Put of a new note past kMaxNotesPerScope
};
const ErrorDomain& ErrorDomainOf(Error);

struct Note {
  std::string name;
  std::string text;
  int64_t version = 0;  // 1 when created, +1 per Put
};

class Notes {
 public:
  // At most this many notes per (account, region).
  static constexpr int64_t kMaxNotesPerScope = 3;

  explicit Notes(store::Store& store) : store_(store) {}

  // Creates or replaces the scope's note `name`; returns its new version. ResourceExhausted
  // (Error::kNoteLimitExceeded) when it is new and the scope already holds kMaxNotesPerScope notes
  // (nothing is written).
  StatusOr<int64_t> Put(const Scope& scope, const std::string& name, const std::string& text);
  // NotFound (Error::kNoteNotFound) when the scope has no note `name`.
  StatusOr<Note> Get(const Scope& scope, const std::string& name);

 private:
  store::Store& store_;
};

}  // namespace paddock::toy
