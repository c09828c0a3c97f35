// Timing a GEMM's candidate algorithms on the GPU, once per shape: cuBLASLt's heuristic ranks
// its algorithms by a model of the device, and at a model's small-M shapes (a batch-1 layer's
// 128 rows) its first choice is not always the fastest. runtime/gemm_epilogue_op.cpp times the
// heuristic's first few with the call's own operands and keeps the fastest.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <cuda.h>

namespace torchfuse {
namespace runtime {

struct CandidateTimes {
  // Per candidate: the median GPU microseconds of one call; negative where it declined to run.
  std::vector<double> us;
  // The index chosen: the fastest, unless it beats candidate 0 (the heuristic's own choice) by
  // less than kKeepFirstMargin; -1 when nothing was timed (see why_not).
  int chosen = -1;
  // Whether the calls were queued behind a hold of the stream, released once all were queued
  // (then each time is the GPU's alone, not bounded below by the host's launch rate).
  bool held = false;
  // Whether L2 was overwritten before each timed call (operands read from memory, as in a model).
  bool l2_flushed = false;
  std::string why_not;
};

// A candidate must be this much faster than the heuristic's first to replace it (timing noise
// must not flip a choice between processes for nothing).
constexpr double kKeepFirstMargin = 0.03;

// The index to keep given each candidate's time (negative: declined): the fastest, unless it beats
// candidate 0 by less than kKeepFirstMargin; -1 when every candidate declined.
int choose_candidate(const std::vector<double>& us);

// Times `count` candidates on `stream` (the current stream of CUDA device `device`): one warm-up
// call each, waited for (a kernel's first launch loads its module, which waits for the GPU), then
// `repeats` rounds of one call each, interleaved, every call between two CUDA events and after a
// write of twice the L2's size (operands come from memory), queued behind a hold of the stream
// where the driver allows. queue(i) queues candidate i once and returns false when it declined (then it is not
// timed again). Waits for the timed calls (a host synchronization: not while capturing a graph).
// Throws torchfuse::Error for a driver failure. Threads' timings run one at a time.
CandidateTimes time_candidates(int count, const std::function<bool(int)>& queue, int device, CUstream stream,
                               int repeats = 5);

}  // namespace runtime
}  // namespace torchfuse
