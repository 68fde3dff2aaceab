// The hand-written pod programs of examples/pods, for the functional and the timed pod
// tests: the text of one, moved onto another pod, and a test name for a pod name.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <string>

namespace podsim::testing {

// examples/pods/<file> with its `.pod` line naming `pod` (unchanged when pod is empty).
inline std::string pod_example(const std::string& file, const std::string& pod = "") {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/examples/pods/" + file);
  EXPECT_TRUE(in) << file;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (pod.empty()) return text;
  size_t at = text.find("\n.pod ");
  EXPECT_NE(at, std::string::npos) << file;
  size_t end = text.find('\n', at + 1);
  return text.replace(at + 1, end - at - 1, ".pod \"" + pod + "\"");
}

// "v5e:2x2:slices=2" -> "v5e_2x2_slices_2", for parameterised test names.
inline std::string pod_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace podsim::testing
