// podsim::Error: the one exception type for errors a user can cause (bad HLO, bad
// files, bad configurations, mismatched collectives). Its message says what went wrong,
// where, and what to do; code that catches it prints what() and exits non-zero.
#pragma once

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace podsim {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws podsim::Error with an fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace podsim
