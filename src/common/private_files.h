// common/private_files: the node's state directory and what is under it, kept out of reach of the
// host's other users.
//
// The state directory holds every tenant's secrets (the store), their images' unpacked layers
// (which may carry setuid-root binaries) and their tasks' volumes and logs. None of it is for
// another local user, so the directories that lead there are 0700 and the files holding secrets
// 0600 — made that way, and tightened at start when an older Paddock (or an operator) left them
// looser.
//
//   RETURN_IF_ERROR(MakePrivateDir(state_dir));              // 0700, created if missing
//   RETURN_IF_ERROR(TightenPrivateFile(state_dir + "/paddock.db"));  // group/other bits dropped
#pragma once

#include <string>

#include "common/status.h"

namespace paddock {

// Creates `path` (and its missing parents, with the process's default mode) and leaves `path`
// itself a directory only its owner may enter: mode 0700, or tighter when the owner bits already
// are. An existing directory is tightened the same way (group and other bits cleared). Symlinks
// are followed (a state directory may be one). Unavailable when it cannot be made or changed.
Status MakePrivateDir(const std::string& path);

// Clears the group and other permission bits of the file `path` if it exists (a missing file is
// fine), never following a symlink in the last component.
Status TightenPrivateFile(const std::string& path);

}  // namespace paddock
