// torchfuse_bench --attention-sweep: the timed attention's candidates (ATen's pick, flash
// attention, torchfuse's kernel) over batch, sequence, head dim, masks and grouped heads.
#pragma once

#include <ostream>

namespace torchfuse_bench {

// Calls torchfuse::attention with timed=True once per shape (bf16; query, key and value viewed out
// of one projection, as models produce them) and prints, per shape, each candidate's GPU us per
// call in a CUDA graph of 8 calls and the one kept. Needs CUDA; returns the process exit status.
int run_attention_sweep(std::ostream& out);

}  // namespace torchfuse_bench
