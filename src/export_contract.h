// Export front door, part 3: what an exported program accepts, checked before each call.
//
// torch.export fixes every dim it did not mark dynamic and gives each dynamic dim a symbol with
// a range (range_constraints: Dim("batch", min=1, max=64) becomes s0 in [1, 64]). The TorchScript
// graph torchfuse builds computes with sizes as values, so any size runs, and torchfuse's
// specializations do not key on sizes (no recompile inside the range); but a size outside what
// was exported is not the program the user exported. check() makes it an Error naming the input,
// the dim and the range (or the static size), as PyTorch's ExportedProgram.module() refuses it,
// and refuses a tensor on another device than the program's weights, naming both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include "src/export_reader.h"

namespace torchfuse {
namespace exported {

struct InputContract {
  struct Input {
    std::string name;   // the placeholder's name ("x")
    bool tensor = false;
    std::string shape;  // as exported, for messages: "f32[s0, 4, 32]"
    std::vector<Dim> dims;
  };
  std::string path;
  std::vector<Input> inputs;  // the user inputs, in order
  std::map<std::string, Range> ranges;
  // Where the parameters, buffers and constants live (none when the program has none).
  std::optional<c10::Device> weights_device;

  // Throws Error for the first input outside the contract.
  void check(const std::vector<c10::IValue>& inputs) const;
};

InputContract contract_of(const Program& program, const std::optional<c10::Device>& weights_device);

}  // namespace exported
}  // namespace torchfuse
