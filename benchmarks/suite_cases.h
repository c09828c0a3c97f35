// The fusion benchmark suite (shared/bench/SUITE.md) as TorchScript modules defined in C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/script.h>

namespace torchfuse_bench {

struct SuiteCase {
  std::string name;
  std::string source;                        // TorchScript of `def forward(self, ...)`
  std::vector<std::vector<int64_t>> shapes;  // one per forward argument, in order
};

// The twelve suite cases, in SUITE.md's order.
const std::vector<SuiteCase>& suite_cases();

// A case over rows of 4096 (the 16384 x 4096 ones) with rows of `cols` instead, as many elements
// in all (16384 * 4096 / cols rows), named "<name>@<cols>". Throws std::invalid_argument for a
// case without such rows, or a `cols` that does not divide the element count.
SuiteCase with_row_length(const SuiteCase& c, int64_t cols);

// A case over rows (the 16384 x 4096 ones, or those with_row_length made) with `rows` rows of the
// same length, named "<name>#<rows>" (--rows 1: single rows, as in a [1, N] softmax). Throws
// std::invalid_argument for a case without such rows, or rows < 1.
SuiteCase with_rows(const SuiteCase& c, int64_t rows);

// The small-tensor latency test: the tanh-GELU chain on a 64x1024 input.
SuiteCase latency_case();

// A fresh module whose forward is the case's TorchScript (eval mode: `training` = false).
torch::jit::Module make_module(const SuiteCase& c);

// randn inputs of the case's shapes on the current CUDA device, all in `dtype` (weights too).
std::vector<c10::IValue> make_inputs(const SuiteCase& c, c10::ScalarType dtype);

// "float32", "bfloat16", "float16" <-> ScalarType; parse throws std::invalid_argument.
std::string dtype_name(c10::ScalarType dtype);
c10::ScalarType parse_dtype(const std::string& name);

// Every tensor in a result: a tensor, or a tuple/list of tensors (nested).
std::vector<at::Tensor> tensors_of(const c10::IValue& value);

// Bytes of all tensors in `values` (each counted once, as SUITE.md's "min bytes" does).
int64_t tensor_bytes(const std::vector<c10::IValue>& values);

}  // namespace torchfuse_bench
