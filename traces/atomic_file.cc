#include "traces/atomic_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace podsim::traces {

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(std::ostream&)>& write) {
  const std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::error_code ec;
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) fail("cannot write {} '{}': {} (does the directory exist?)", what, path, std::strerror(errno));
    write(file);
    file.close();
    if (!file) {
      std::filesystem::remove(temp, ec);
      fail("cannot write {} '{}': writing failed (disk full?)", what, path);
    }
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    std::filesystem::remove(temp, ec);
    fail("cannot write {} '{}': {}", what, path, reason);
  }
}

}  // namespace podsim::traces
