// A CPU emulation of the CUDA execution model torchfuse's attention kernel is written for, so
// that its body (codegen/attention_body.cuh) runs, compiled as C++, on a machine without a GPU:
// each thread of a block is a std::thread; blocks run one after another; __syncthreads and the
// warp collectives (__syncwarp, __shfl_xor_sync, mma.m16n8k16) meet at barriers and exchange
// values through memory. What it checks is the body's arithmetic and indexing (fragments, masks,
// online softmax, the key split's combination); what it cannot is the hardware's timing: its
// asynchronous copies land at once, so a missing wait shows only on a GPU.
//
// tests/emulated_attention_device.inc gives the body the primitives of
// codegen/attention_device.cuh on top of this.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tfemu {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx;
inline thread_local Dim3 blockIdx;

// A reusable barrier of n threads. A thread left waiting a minute means the kernel's threads
// disagree about barriers, which would hang a GPU too: reported, and the process aborted rather
// than left hanging.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    if (!cv_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != generation; })) {
      std::fprintf(stderr, "emulated kernel: a barrier of %d threads waited a minute with %d arrived\n", n_, arrived_);
      std::abort();
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

// What the 32 threads of a warp exchange in a collective.
struct Warp {
  Barrier barrier{32};
  float f[32];
  uint32_t a[32][4];
  uint32_t b[32][2];
};

struct Block {
  explicit Block(int threads) : barrier(threads), warps(static_cast<size_t>(threads / 32)) {}
  Barrier barrier;
  std::vector<Warp> warps;
};
inline thread_local Block* t_block = nullptr;

inline Warp& this_warp() { return t_block->warps[threadIdx.x / 32]; }
inline int this_lane() { return static_cast<int>(threadIdx.x % 32); }

inline void __syncthreads() { t_block->barrier.arrive_and_wait(); }
inline void __syncwarp() { this_warp().barrier.arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned /*mask: the kernel passes the full warp*/, float v, int lane_mask) {
  Warp& w = this_warp();
  const int lane = this_lane();
  w.f[lane] = v;
  w.barrier.arrive_and_wait();
  const float r = w.f[lane ^ lane_mask];
  w.barrier.arrive_and_wait();  // every lane has read before the next collective writes
  return r;
}

template <class T>
T min(T a, T b) {
  return b < a ? b : a;
}

// mma.sync.m16n8k16.row.col with float accumulators: c += A (16 x 16) * B (16 x 8), every lane
// holding PTX's fragments (lane = 4 * g + t; A's registers: rows g, g + 8, then the same rows at
// columns 8 on; B's: rows 2t, 2t + 1, then 2t + 8, 2t + 9, of column g; pairs low half first).
// `to_float` reads one 16-bit element.
template <class ToFloat>
void mma_m16n8k16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1, ToFloat to_float) {
  Warp& w = this_warp();
  const int lane = this_lane();
  for (int i = 0; i < 4; ++i) w.a[lane][i] = a[i];
  w.b[lane][0] = b0;
  w.b[lane][1] = b1;
  w.barrier.arrive_and_wait();
  auto element = [](uint32_t pair, int k) { return static_cast<uint16_t>(k % 2 ? pair >> 16 : pair & 0xffffu); };
  auto a_at = [&](int row, int k) {
    return to_float(element(w.a[4 * (row % 8) + (k % 8) / 2][(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k));
  };
  auto b_at = [&](int k, int col) { return to_float(element(w.b[4 * col + (k % 8) / 2][k >= 8 ? 1 : 0], k)); };
  const int g = lane / 4, t = lane % 4;
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    float sum = c[i];
    for (int k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, col);
    out[i] = sum;
  }
  w.barrier.arrive_and_wait();
  for (int i = 0; i < 4; ++i) c[i] = out[i];
}

// kernel(params) over `blocks` blocks of `threads` threads (a multiple of 32).
template <class Params>
void launch(void (*kernel)(Params), const Params& params, int64_t blocks, int threads) {
  for (int64_t b = 0; b < blocks; ++b) {
    Block block(threads);
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&, i] {
        threadIdx.x = static_cast<unsigned>(i);
        blockIdx.x = static_cast<unsigned>(b);
        t_block = &block;
        kernel(params);
      });
    }
    for (std::thread& th : pool) th.join();
  }
}

}  // namespace tfemu
