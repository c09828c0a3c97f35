// torchfuse's attention kernel: softmax(q @ k^T * scale + mask) @ v, flash attention's schedule
// on mma.sync. Written against the primitives of attention_device.cuh (or the CPU tests'
// emulation of them) and the spec's constants, which come first: kD, kWarps, kSplit, kKeyBlock,
// kHalf, kMask, kMaskPairs, kCausal, kVec. Every branch on them folds at compile time.
//
// Each warp holds 16 query rows; their Q fragments stay in registers. Keys and values come in
// blocks of kKeyBlock (64 or 32) through shared memory. With kSplit == 1 the block's kWarps warps take 16 rows each
// and share every block of keys; with kSplit == kWarps they take the same 16 rows and split the
// key blocks between them (warp w the w-th, w + kSplit-th...), each staging its own, and add
// their partial results up at the end: more warps at work where a call has few rows. A block of
// scores in C layout is, two tiles at a time, the probabilities' A fragment for the product with
// the values: scores and probabilities never leave registers.
constexpr int kRowsPerWarp = 16;
constexpr int kPad = 8;  // shared rows 16 bytes longer: a warp's fragment loads hit 32 banks
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kRowWarps = kWarps / kSplit;              // warps of a block along the rows
constexpr int kStagers = kSplit == 1 ? 32 * kWarps : 32;  // threads staging one block of keys
static_assert(kSplit == 1 || kSplit == kWarps, "the warps split either the rows or the keys");
static_assert(kKeyBlock % 16 == 0 && kKeyBlock >= 32, "keys in steps of 16; a warp's 16 x kD float sums fit its stage");

__device__ __forceinline__ tf_u32 tf_pair(tf_u16 lo, tf_u16 hi) {
  return static_cast<tf_u32>(lo) | (static_cast<tf_u32>(hi) << 16);
}

struct TF_KERNEL_NAME_params {
  const tf_u16* q;
  const tf_u16* k;
  const tf_u16* v;
  const tf_u16* mask;
  tf_u16* out;
  long long batch, heads, kv_heads, q_len, k_len, q_tiles;
  long long qs[4], ks[4], vs[4], ms[4], os[4];
  double scale;
};

// Elements (row, col) and (row, col + 1) of a [rows, kD] operand as one pair; zeros past `rows`.
__device__ __forceinline__ tf_u32 tf_load_pair(const tf_u16* base, long long row_stride, long long col_stride,
                                               long long row, long long rows, int col) {
  if (row >= rows) return 0u;
  const tf_u16* p = base + row * row_stride + col * col_stride;
  if constexpr (kVec) return *reinterpret_cast<const tf_u32*>(p);
  else return tf_pair(p[0], p[col_stride]);
}

// Keys or values [first, first + kKeyBlock) of one head into shared rows, by the kStagers threads
// sharing them (`stager` is this thread's index among them); zeros past `rows` (a zero value
// times a zero probability stays zero: garbage could be NaN). With vector loads the copies are
// asynchronous, every one of a thread in flight at once (tf_copies_wait lands them).
__device__ __forceinline__ void tf_stage(tf_u16 (*dst)[kD + kPad], const tf_u16* base, long long row_stride,
                                         long long col_stride, long long first, long long rows, int stager) {
  if constexpr (kVec) {
    constexpr int kChunks = kD / 8;
    static_assert(kKeyBlock * kChunks % kStagers == 0, "16-byte chunks split evenly over the stagers");
#pragma unroll
    for (int j = 0; j < kKeyBlock * kChunks / kStagers; ++j) {
      const int i = stager + j * kStagers;
      const int r = i / kChunks, c = (i % kChunks) * 8;
      const bool valid = first + r < rows;
      tf_copy16(&dst[r][c], valid ? base + (first + r) * row_stride + c : base, valid);
    }
    tf_copies_commit();
  } else {
    for (int i = stager; i < kKeyBlock * kD; i += kStagers) {
      const int r = i / kD, c = i % kD;
      dst[r][c] = first + r < rows ? base[(first + r) * row_stride + c * col_stride] : tf_u16(0);
    }
  }
}

// The threads sharing one stage of keys and values wait for each other.
__device__ __forceinline__ void tf_stage_barrier() {
  if constexpr (kSplit == 1) __syncthreads();
  else __syncwarp();
}

// This thread's mask entries for the key block at `first`, every load at once, from addresses
// clamped into the mask (rows and keys past the ends are not used). With kMaskPairs (keys
// contiguous, an even key length, even strides) a thread's two neighbouring keys are one load.
__device__ __forceinline__ void tf_load_mask(float added[kKeyBlock / 8][4], const tf_u16* mask, const long long ms[4],
                                             const long long rows[2], long long first, long long q_len,
                                             long long k_len, int t) {
#pragma unroll
  for (int n = 0; n < kKeyBlock / 8; ++n) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long row = min(rows[r], q_len - 1);
      if constexpr (kMaskPairs) {
        const long long col = min(first + n * 8 + 2 * t, k_len - 2);
        const tf_u32 pair = *reinterpret_cast<const tf_u32*>(mask + row * ms[2] + col);
        added[n][2 * r] = tf_to_float(static_cast<tf_u16>(pair & 0xffffu));
        added[n][2 * r + 1] = tf_to_float(static_cast<tf_u16>(pair >> 16));
      } else {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const long long col = min(first + n * 8 + 2 * t + i, k_len - 1);
          added[n][2 * r + i] = tf_to_float(mask[row * ms[2] + col * ms[3]]);
        }
      }
    }
  }
}

TF_ENTRY void __launch_bounds__(32 * kWarps) TF_KERNEL_NAME(const TF_KERNEL_NAME_params p) {
  __shared__ __align__(16) tf_u16 keys[kSplit][kKeyBlock][kD + kPad];
  __shared__ __align__(16) tf_u16 values[kSplit][kKeyBlock][kD + kPad];
  tf_grid_dependency();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int part = kSplit == 1 ? 0 : warp;  // this warp's share of the key blocks, and its stage
  const int stager = kSplit == 1 ? static_cast<int>(threadIdx.x) : lane;
  long long block = blockIdx.x;
  const long long tile = block % p.q_tiles;
  block /= p.q_tiles;
  const long long h = block % p.heads, b = block / p.heads;
  const long long kh = h / (p.heads / p.kv_heads);
  const long long block_row0 = tile * kRowsPerWarp * kRowWarps;
  const long long row0 = block_row0 + (kSplit == 1 ? warp * kRowsPerWarp : 0);
  const long long rows[2] = {row0 + g, row0 + g + 8};

  const tf_u16* q = p.q + b * p.qs[0] + h * p.qs[1];
  const tf_u16* k = p.k + b * p.ks[0] + kh * p.ks[1];
  const tf_u16* v = p.v + b * p.vs[0] + kh * p.vs[1];
  const tf_u16* mask = kMask ? p.mask + b * p.ms[0] + h * p.ms[1] : nullptr;

  tf_u32 qf[kD / 16][4];
#pragma unroll
  for (int c = 0; c < kD / 16; ++c) {
    const int col = c * 16 + 2 * t;
    qf[c][0] = tf_load_pair(q, p.qs[2], p.qs[3], rows[0], p.q_len, col);
    qf[c][1] = tf_load_pair(q, p.qs[2], p.qs[3], rows[1], p.q_len, col);
    qf[c][2] = tf_load_pair(q, p.qs[2], p.qs[3], rows[0], p.q_len, col + 8);
    qf[c][3] = tf_load_pair(q, p.qs[2], p.qs[3], rows[1], p.q_len, col + 8);
  }

  // Scores run in log2 units: exp2(x * log2e) = exp(x).
  const float scale = static_cast<float>(p.scale);
  float running_max[2] = {TF_NEG_INF, TF_NEG_INF};
  float running_sum[2] = {0.f, 0.f};  // this thread's columns only; the 4 lanes of a row add up at the end
  float acc[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;

  long long key_end = p.k_len;
  if (kCausal) key_end = min(key_end, block_row0 + kRowsPerWarp * kRowWarps);  // later keys: no row of the block sees them
  for (long long first = part * kKeyBlock; first < key_end; first += kSplit * kKeyBlock) {
    tf_stage_barrier();  // the last block's products are done with the shared rows
    tf_stage(keys[part], k, p.ks[2], p.ks[3], first, p.k_len, stager);
    tf_stage(values[part], v, p.vs[2], p.vs[3], first, p.k_len, stager);
    float added[kKeyBlock / 8][4];  // loaded while the keys land
    if constexpr (kMask) tf_load_mask(added, mask, p.ms, rows, first, p.q_len, p.k_len, t);
    if constexpr (kVec) tf_copies_wait<1>();  // the keys (the values may still be in flight)
    tf_stage_barrier();

    float s[kKeyBlock / 8][4];
#pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int c = 0; c < kD / 16; ++c) {
        const tf_u32 b0 = *reinterpret_cast<const tf_u32*>(&keys[part][n * 8 + g][c * 16 + 2 * t]);
        const tf_u32 b1 = *reinterpret_cast<const tf_u32*>(&keys[part][n * 8 + g][c * 16 + 8 + 2 * t]);
        tf_mma(s[n], qf[c], b0, b1);
      }
    }

    // Scale, mask, and this block's row maxima (fmaxf passes over NaN: a NaN score reaches the
    // sum through exp2 below, and its row comes out NaN, as eager's softmax gives).
    float block_max[2] = {TF_NEG_INF, TF_NEG_INF};
#pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long row = rows[i >> 1], col = first + n * 8 + 2 * t + (i & 1);
        float x = s[n][i] * scale;
        if (col >= p.k_len || (kCausal && col > row)) {
          x = TF_NEG_INF;
        } else if constexpr (kMask) {
          x += added[n][i];
        }
        x *= kLog2e;
        s[n][i] = x;
        block_max[i >> 1] = fmaxf(block_max[i >> 1], x);
      }
    }
    float rescale[2], offset[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 1));
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 2));
      const float new_max = fmaxf(running_max[r], block_max[r]);
      // A row with nothing seen yet (all -inf so far) subtracts 0: exp2(-inf) is 0, not NaN.
      offset[r] = new_max == TF_NEG_INF ? 0.f : new_max;
      rescale[r] = exp2f(running_max[r] - offset[r]);
      running_max[r] = new_max;
      running_sum[r] *= rescale[r];
    }
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      acc[n][0] *= rescale[0];
      acc[n][1] *= rescale[0];
      acc[n][2] *= rescale[1];
      acc[n][3] *= rescale[1];
    }
    if constexpr (kVec) {
      tf_copies_wait<0>();  // this thread's values; the barrier makes every stager's visible
      tf_stage_barrier();
    }
#pragma unroll
    for (int c = 0; c < kKeyBlock / 16; ++c) {
      float e[2][4];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          e[j][i] = exp2f(s[2 * c + j][i] - offset[i >> 1]);
          running_sum[i >> 1] += e[j][i];
        }
      }
      const tf_u32 a[4] = {tf_pack(e[0][0], e[0][1]), tf_pack(e[0][2], e[0][3]), tf_pack(e[1][0], e[1][1]),
                           tf_pack(e[1][2], e[1][3])};
      const int key = c * 16 + 2 * t;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const int col = n * 8 + g;
        const tf_u32 b0 = tf_pair(values[part][key][col], values[part][key + 1][col]);
        const tf_u32 b1 = tf_pair(values[part][key + 8][col], values[part][key + 9][col]);
        tf_mma(acc[n], a, b0, b1);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    running_sum[r] += __shfl_xor_sync(0xffffffffu, running_sum[r], 1);
    running_sum[r] += __shfl_xor_sync(0xffffffffu, running_sum[r], 2);
  }
  if constexpr (kSplit > 1) {
    // The warps' partial results over their key blocks, added up: each row's maximum over the
    // warps, each warp's sum and accumulators scaled to it (a warp that saw only -inf adds 0; a
    // row every warp saw only -inf keeps sum 0, and a NaN sum stays NaN).
    __shared__ float part_max[kSplit][kRowsPerWarp], part_sum[kSplit][kRowsPerWarp];
    if (t == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        part_max[warp][g + 8 * r] = running_max[r];
        part_sum[warp][g + 8 * r] = running_sum[r];
      }
    }
    __syncthreads();  // also: every warp is done with its stage, which holds its accumulators next
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float row_max = TF_NEG_INF;
#pragma unroll
      for (int w = 0; w < kSplit; ++w) row_max = fmaxf(row_max, part_max[w][g + 8 * r]);
      const float offset = row_max == TF_NEG_INF ? 0.f : row_max;
      float total = 0.f;
#pragma unroll
      for (int w = 0; w < kSplit; ++w) total += part_sum[w][g + 8 * r] * exp2f(part_max[w][g + 8 * r] - offset);
      running_sum[r] = total;
      const float mine = exp2f(running_max[r] - offset);
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        acc[n][2 * r] *= mine;
        acc[n][2 * r + 1] *= mine;
      }
    }
    // A warp's 16 x kD floats fit its stage of keys (16 x (kD + 8) x 4 bytes <= kKeyBlock x (kD + 8) x 2).
    typedef float PartRows[kD + kPad];
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) reinterpret_cast<PartRows*>(&keys[warp][0][0])[g + 8 * (i >> 1)][n * 8 + 2 * t + (i & 1)] = acc[n][i];
    }
    __syncthreads();
    // Warp w adds up and stores the column tiles n = w, w + kSplit...
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      if (n % kSplit != warp) continue;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float sum = 0.f;
#pragma unroll
        for (int w = 0; w < kSplit; ++w) sum += reinterpret_cast<PartRows*>(&keys[w][0][0])[g + 8 * (i >> 1)][n * 8 + 2 * t + (i & 1)];
        acc[n][i] = sum;
      }
    }
  }

  // A row that saw only -inf has sum 0 and comes out 0 / 0 = NaN, as eager's softmax gives.
  const float inverse[2] = {1.f / running_sum[0], 1.f / running_sum[1]};
  tf_u16* out = p.out + b * p.os[0] + h * p.os[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= p.q_len) continue;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      if (kSplit > 1 && n % kSplit != warp) continue;
      const int col = n * 8 + 2 * t;
      const tf_u32 pair = tf_pack(acc[n][2 * r] * inverse[r], acc[n][2 * r + 1] * inverse[r]);
      tf_u16* dst = out + rows[r] * p.os[2] + col * p.os[3];
      if constexpr (kVec) {
        *reinterpret_cast<tf_u32*>(dst) = pair;
      } else {
        dst[0] = static_cast<tf_u16>(pair & 0xffffu);
        dst[p.os[3]] = static_cast<tf_u16>(pair >> 16);
      }
    }
  }
}
