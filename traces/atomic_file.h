// Writing a file so that a reader never sees it half-written: into a temporary file in
// the same directory, then renamed over the path. Profiles and reports are written so.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace podsim::traces {

// Calls write with a stream onto the temporary file, then renames it to path. Failures
// (no such directory, a full disk, the rename) are podsim::Error "cannot write WHAT
// 'PATH': ...", with the temporary file removed.
void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(std::ostream&)>& write);

}  // namespace podsim::traces
