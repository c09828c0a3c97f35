// Launch-time layout of a row or column reduction: the domain split into three segments
// (kept dims before the reduced block, the reduced block, kept dims after it), each coalesced
// across all operands, plus the compile-time choices of the schedule (vector width, threads per
// row, elements cached per thread). Full reductions use the pointwise layout of their domain.
#pragma once

#include <string>
#include <vector>

#include "codegen/cache_hints.h"
#include "codegen/device_target.h"
#include "codegen/layout.h"
#include "codegen/reduction_analysis.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

// Column schedule: blocks of 256 threads that fit one multiprocessor (the kernel's launch bounds
// hold it to 64 registers per thread) and the most the split aims for (Tuning::column_blocks).
constexpr int kColumnBlocksPerSm = 4;
// Split column passes launched cooperatively: the most blocks of 256 a multiprocessor the split
// may aim for (Tuning::column_pass_blocks; the kernel's launch bounds hold it to 32 registers
// per thread at 8).
constexpr int kColumnPassMaxBlocksPerSm = 8;
// Row schedule with clusters: threads per block (two blocks fit one multiprocessor).
constexpr int kClusterBlock = 512;

struct SegmentedOperand {
  Access access = Access::Strided;  // Scalar, Uniform, InnerBroadcast (per row), InnerContig, Strided
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> outer_strides;  // segment A
  std::vector<int64_t> red_strides;    // segment R
  std::vector<int64_t> inner_strides;  // segment B (column schedule)
  bool shared = false;  // an element serves several rows/columns (stride 0 over a kept dim of size > 1)
  bool staged = false;  // staged rows: this input's row is copied into shared memory (ReductionLayout::stages)
};

struct ReductionLayout {
  Schedule schedule = Schedule::RowReduction;
  std::vector<int64_t> outer_sizes;  // A: rows (row schedule) or outer index (column schedule)
  std::vector<int64_t> red_sizes;    // R
  std::vector<int64_t> inner_sizes;  // B: empty for the row schedule
  std::vector<SegmentedOperand> inputs;
  // compile-time choices
  int vec = 1;             // elements per vector access along the reduced dim (row schedule)
  int threads_per_row = 32;
  int block = 256;
  int chunks_per_thread = 1;  // cached mode: vectors each thread keeps on chip
  bool cached = true;         // row kept in registers across passes; false: re-read per pass
  bool cache_inputs = false;  // cached mode keeps the re-read inputs as loaded (not every value)
  bool cache_first_pass = false;  // cached mode keeps only first-pass values (Reuse::FirstPass)
  int cluster = 1;            // row schedule: blocks of a thread-block cluster sharing each row
  int split = 1;              // column schedule: blocks sharing one reduction (combined by a 2nd kernel)
  // Column schedules: threads across the kept inner dims, a tile of tile_threads * vec columns
  // (one-pass column reductions: Tuning::column_tile_threads; column passes: 32).
  int tile_threads = 32;
  // Split column passes: the tiles the grid takes at once, each block looping over its tiles in
  // waves (0: every tile at once). The launch's grid, not the source.
  int64_t wave_tiles = 0;
  // Split column passes: a launch per pass (Tuning::column_pass_launches), the blocks of 256 per
  // multiprocessor it aims at (__launch_bounds__); 0: one cooperative launch.
  int phased_blocks = 0;
  // Split column passes in one cooperative launch: the blocks of 256 per multiprocessor the split
  // aims at (Tuning::column_pass_blocks), which the kernel's __launch_bounds__ name.
  int split_blocks = 0;
  int unroll = 1;             // column schedule: rows whose vector loads each thread issues together;
                              // looped rows: vectors each thread loads ahead per step
  bool online = false;        // row schedule and looped split column passes: softmax sums
                              // accumulate with their max (OnlineSum)
  bool index64 = false;
  bool fast_math = true;      // Tuning::fast_math when planned (it changes the source)
  bool chunk_sums = false;    // looped rows: Tuning::chunk_sums when planned (it changes the source)
  // One-pass column reductions: how a thread adds its rows of a float sum before the double
  // partials (Tuning::column_float_sums: 0 in double, 1 compensated in float, 2 in float).
  int float_sums = 0;
  int min_blocks = 0;         // row schedule: __launch_bounds__'s blocks per multiprocessor (0: none)
  bool prefetch = false;      // row schedule: each team prefetches its next row into L2 (cached, vectorized rows)
  int rounds = 1;             // cached row schedule: row teams each block takes in turn (the launch's grid)
  // Cached row schedule: registers per thread it may fill with inputs a later pass reads first,
  // loaded with the first pass's (Tuning::row_early_loads; 0: none), and how many of those may be
  // 16-bit (-1: any number).
  int early_registers = 0;
  int early_narrow_inputs = -1;
  // Row schedule with block-wide teams: a pass's reductions share one barrier round, their
  // shared slots alternating by row group (Tuning::row_shared_rounds).
  bool shared_rounds = false;
  // Staged rows (sm_90+): the inputs read again live in shared memory, one bulk copy per row and
  // input, in a ring of this many buffers: the block's next stages - 1 row groups load while it
  // works on one; 0: not staged (see row_reduction.cpp).
  int stages = 0;
  // Ringed rows (sm_90+, looped rows): the inputs read again stream through a ring of ring_slots
  // chunks of ring_chunk columns in shared memory (a row takes at most ring_slots chunks); 0: none
  // (see row_reduction.cpp).
  int ring_chunk = 0;
  int ring_slots = 0;
  // Cached rows (no cluster, staging or ring) whose length is threads_per_row * chunks_per_thread
  // * vec: the source takes that length as a constant and has no column bounds checks; rows
  // past the last are read as row 0 and only their stores are guarded (Tuning::row_exact).
  bool exact = false;
  int looped_blocks_per_sm = 1;  // looped rows: blocks per multiprocessor the launch aims for
  CacheHints hints;           // L2 hints on its vector loads and stores (choose_cache_hints)

  int64_t outer() const;
  int64_t reduced() const;
  int64_t inner() const;
  // Row schedule: reduced blocks of several dims, decomposed per column by tf_fast_div (32-bit
  // indices); the kernel's parameters then carry red_div.
  bool fast_red_offsets() const { return !index64 && red_sizes.size() > 1; }
  // Column schedule: split over blocks and launched once per pass (phased_blocks).
  bool phased() const { return split > 1 && phased_blocks > 0; }
  std::string key() const;
  // Staged rows: per column of a row, the shared-memory bytes of the staged inputs before input k
  // (where input k's row starts in a team's buffer) and of all of them; one team's row; the
  // dynamic shared memory a block needs.
  int64_t staged_bytes_before(size_t k) const;
  int64_t staged_bytes_per_column() const { return staged_bytes_before(inputs.size()); }
  int64_t staged_row_bytes() const { return staged_bytes_per_column() * reduced(); }
  int64_t staged_block_bytes() const { return staged_row_bytes() * stages * (block / threads_per_row); }
  // Ringed rows: one chunk's bytes (every staged input's slice), the ring's.
  int64_t ring_slot_bytes() const { return staged_bytes_per_column() * ring_chunk; }
  int64_t ring_block_bytes() const { return ring_slot_bytes() * ring_slots; }
  // Ringed rows: chunks per row.
  int64_t ring_chunks_per_row() const { return ring_chunk == 0 ? 0 : (reduced() + ring_chunk - 1) / ring_chunk; }
  // The row length every vector slot of a team covers (cached rows without a cluster).
  int64_t team_span() const { return int64_t{threads_per_row} * chunks_per_thread * vec; }
};

// Staged rows keep the dynamic shared memory of a block within this (the multiprocessor's 228 KB,
// less the block's static shared memory and the 1 KB the hardware reserves per block).
constexpr int64_t kMaxStagedBlockBytes = 220 * 1024;

// Plans the layout for operands of the given shapes over `domain` reducing `dims` (a
// contiguous block). `cache` is what the row schedule must keep per element to read it again;
// `online_cache` the same with online softmax sums, where the group has any (rows of at least
// Tuning::online_min_row elements use them: ReductionLayout::online). `allow_vector`: false
// where the call's pointers or strides do not allow vector accesses. (Cache hints are left to
// the schedule unit, codegen/schedule.cpp.)
ReductionLayout plan_reduction_layout(Schedule schedule, const std::vector<int64_t>& domain,
                                      const std::vector<int64_t>& dims, const std::vector<OperandShape>& inputs,
                                      const RowCacheNeeds& cache, const RowCacheNeeds* online_cache,
                                      const DeviceTarget& target, const Tuning& tune, bool allow_vector);

// One-pass column reductions: tiles of Tuning::column_tile_threads threads across the kept inner
// dims, Tuning::column_rows threads along the reduced dim a block (fewer
// where the block's partial rows of the accumulators, `accumulator_bytes` a column together,
// would outgrow 46 KiB of shared memory, leaving room under 48 for its other shared variables;
// one column a thread where even 8 rows of vectors would), and the split of each tile's rows over blocks redone
// for that block. Sets ReductionLayout::tile_threads, block and split (and vec, unroll).
void choose_column_rows(ReductionLayout& l, int accumulator_bytes, const DeviceTarget& target, const Tuning& tune);

// Column groups of several passes: keeps each thread's rows of the element inputs in registers
// (ReductionLayout::cached, chunks_per_thread rows; block 256 or 512) where they fit
// Tuning::column_cache; else a block of 256 that reads the column again in every pass. A split
// layout (ReductionLayout::split > 1) keeps blocks of 256 and sizes the cache by the rows of one
// split, ceil(reduced / split).
void choose_column_cache(ReductionLayout& l, const Tuning& tune);

// The vector of columns a thread of looped column passes takes: the layout's vec (16 bytes of a
// contiguous inner dim, 1 where an input's inner dim is not contiguous or the call's pointers are
// not aligned), narrowed until 32 threads still cover the inner dim; 1 under
// Tuning::column_pass_vectors = 0.
int column_pass_vector(const ReductionLayout& l, const Tuning& tune);

// Column groups of several passes whose columns do not fit registers (choose_column_cache), with
// fewer tiles of 32 columns (or vectors of columns) than fill the device: the blocks a tile's rows are split over (1: no
// split). Each split block runs every pass over its rows and the blocks of a tile exchange each
// pass's partial results through a barrier of their own, so the launch must keep them all
// resident (a cooperative launch, DeviceTarget::cooperative_launch). Aims for
// Tuning::column_pass_blocks blocks of 256 threads per multiprocessor, at least kMinSplitPassRows
// rows a block. Where the tiles' element inputs outgrow Tuning::column_pass_wave_kb, the grid
// takes ReductionLayout::wave_tiles tiles at once (split over more blocks each) and loops over
// the rest in waves. Under Tuning::column_pass_launches a looped layout splits as far as that
// many blocks a multiprocessor, each pass a launch of its own (no barrier, no residency cap, no
// waves). Sets ReductionLayout::split, wave_tiles and phased_blocks.
void choose_column_pass_split(ReductionLayout& l, const DeviceTarget& target, const Tuning& tune);
constexpr int64_t kMinSplitPassRows = 64;
// Split column passes: a tile's barrier counter is element tile * kTileCounterStride of the
// launch's counters (a 128-byte line a tile).
constexpr int kTileCounterStride = 32;

}  // namespace codegen
}  // namespace torchfuse
