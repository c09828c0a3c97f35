// Random programs for the differential fuzzer: chains of the ops torchfuse converts (pointwise,
// reductions, normalizations, views: permutes, slices, selects, expands, chunk/split/unbind
// pieces, index ops: triu/tril, argmax/argmin, max/min with indices, repeat and repeat_interleave,
// attention spelled out as matmul, softmax, matmul, and GEMMs with what follows them in models:
// bias, activation, residual add, cast), with broadcasting, scalars and casts, over random shapes (size-1,
// prime and odd sizes, rows longer than a block) and layouts (sliced, transposed, expanded,
// channels-last, storage offsets). A program is TorchScript source plus input specs; the same
// (seed, index) gives the same program and, with torch::manual_seed, the same inputs.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace tffuzz {

enum class Layout { Contiguous, Sliced, Transposed, Expanded, ChannelsLast, Offset };
const char* layout_name(Layout l);

// What values the inputs hold: randn, or randn with special values mixed in.
enum class Values { Normal, Special };

struct Input {
  std::vector<int64_t> sizes;
  Layout layout = Layout::Contiguous;
};

// torch.randn cast to `dtype`, laid out as `in` says ("sliced": t[..., 2:2+n] of a tensor 5 wider
// in its last dim; "transposed": .transpose(-1, -2) of a contiguous tensor whose last two sizes
// are swapped; "expanded": size 1 in its first dim longer than 1, expanded back; "offset": 3
// elements into its storage); with specials mixed in for Values::Special.
at::Tensor make_input(const Input& in, c10::ScalarType dtype, c10::Device device, Values values = Values::Normal);

// One statement: `<name> = <expr>`, with the values it reads and the ops it uses (for the
// per-op counts). Names stay fixed when shrinking removes other statements.
struct Statement {
  std::string name;
  // Lines before `<name> = <expr>` (a tuple unpacking: `t3_0, t3_1 = x0.chunk(2, 1)`), whose
  // names begin with the statement's.
  std::vector<std::string> pre;
  std::string expr;
  std::vector<int64_t> sizes;  // the result's shape
  std::vector<std::string> reads;
  std::vector<std::string> ops;
};

struct Program {
  c10::ScalarType dtype = c10::kFloat;
  Values values = Values::Normal;
  std::vector<Input> inputs;
  std::vector<Statement> statements;
  std::vector<std::string> outputs;  // statement names returned (a tuple when several)

  std::string source() const;  // "def forward(self, x0, ...):\n    t0 = ...\n    return ..."
  std::vector<std::string> ops() const;
  // Fresh inputs on `device` (the dtype given, e.g. bf16 on a CPU without fp16 kernels).
  std::vector<c10::IValue> make_inputs(c10::Device device, c10::ScalarType dtype) const;
  int64_t max_elements() const;
};

struct Options {
  int64_t max_elements = int64_t{1} << 22;  // per tensor
  bool allow_half = true;                   // fp16 graphs (the CPU profile lacks some fp16 kernels)
};

// The program for (seed, index).
Program generate(uint64_t seed, uint64_t index, const Options& options);

// Smaller programs that may still fail the same way: each output alone, prefixes of the
// statements, statements replaced by one of their operands (same shape). Each candidate drops
// statements nothing returned uses.
std::vector<Program> shrink_candidates(const Program& p);

}  // namespace tffuzz
