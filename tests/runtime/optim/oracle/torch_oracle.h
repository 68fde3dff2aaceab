// Runs tests/runtime/optim/oracle/optim_oracle.py (PyTorch 1.13) through the shared
// runner of tests/runtime/torch_oracle.h. Mode "optim": inputs and cases (a JSON list,
// see the script) go in, cached; mode "digits": neither is used, and it is not cached
// (it checks the dataset file as Python reads it now).
#pragma once

#include <string>

#include "tests/runtime/torch_oracle.h"

namespace podsim::testing {

using torch_oracle::OracleResult;

inline OracleResult run_torch_oracle(const std::string& mode, const ir::NamedLiterals& inputs = {},
                                     const std::string& cases_json = "[]") {
  const std::string script = "tests/runtime/optim/oracle/optim_oracle.py";
  if (mode == "digits")
    return torch_oracle::run_torch_script(script, {mode}, {}, /*cacheable=*/false);
  return torch_oracle::run_torch_script(
      script, {mode},
      {{"in.safetensors", torch_oracle::safetensors_content(inputs)}, {"cases.json", cases_json}});
}

}  // namespace podsim::testing
