// Fuzz target: the executable reader must reject or accept any bytes without crashing;
// what it accepts must survive the file form and the text form unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/error.h"
#include "isa/isa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podsim::isa;
  Executable executable;
  try {
    executable = deserialize(data, size, "fuzz");
  } catch (const podsim::Error&) {
    return 0;
  }
  std::vector<uint8_t> again = serialize(executable);
  if (deserialize(again.data(), again.size(), "fuzz") != executable) std::abort();
  if (assemble(disassemble(executable), "fuzz") != executable) std::abort();
  return 0;
}
