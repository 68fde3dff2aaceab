// Fuzz target: the safetensors reader must reject or accept any bytes without crashing,
// and what it accepts must serialize and parse back to the same tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/error.h"
#include "compiler/ir/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podsim::ir;
  NamedLiterals tensors;
  try {
    tensors = parse_safetensors({reinterpret_cast<const std::byte*>(data), size});
  } catch (const podsim::Error&) {
    return 0;
  }
  std::vector<std::byte> again = serialize_safetensors(tensors);
  NamedLiterals reread = parse_safetensors(again);
  if (reread != tensors) std::abort();
  return 0;
}
