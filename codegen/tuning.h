// Schedule knobs whose defaults come from measurements (docs/performance.md). A Tuning is data:
// the driver resolves one per compiled module (defaults, then $TORCHFUSE_TUNE, then
// CompileOptions::tune; runtime/process_tuning.h) and hands it to planning and generation, which
// read no global. A knob that changes a kernel's source is copied into the kernel's layout by the
// planner and so is part of the variant key (codegen/schedule.h), so cached kernels stay correct.
#pragma once

#include <string>

namespace torchfuse {
namespace codegen {

// How a cached row schedule keeps element values that a later pass reads again.
enum class RowCachePolicy {
  Values,  // every such value, in registers as float
  Inputs,  // only the group inputs they derive from, as loaded (16-bit types stay packed); the rest is recomputed
  FirstPass,  // only values of the first pass (before any reduction result); later ones are recomputed
  Auto,    // Inputs for 16-bit inputs where that pays (see prefer_inputs in reduction_layout.cpp)
};

struct Tuning {
  // Defaults from sweeps over the suite on H100 and H200 (scripts/tune_sweep.sh): pointwise
  // unroll 2-4 was 0-25% slower than 1; column unroll 8 was 7-14% faster than 1; full-reduction
  // unroll: see full_unroll; 2 or 8 vectors per row thread lost on most row cases.
  int pointwise_unroll = 1;  // vectors each thread loads before computing (pointwise fast path)
  int pointwise_waves = 0;   // grid-stride rounds of a full device (0: a thread per vector of work;
                             // H200: f32 gelu 6%, swiglu 5%, bf16 swiglu 7% faster than 1 round, bf16 gelu 4% slower)
  // Pointwise groups with a transposed input: the side of the square tile it is read through
  // shared memory in (PointwiseLayout::tile_dim; 0: no tiles, such inputs are read element by
  // element along the output's innermost dim).
  int pointwise_tile = 64;  // H100, sigmoid(x.t()) * y on [8192, 4096]: 64 vs 32 f32 141.8 vs 157.8 us, bf16 76.2 vs 99.4
  RowCachePolicy row_cache = RowCachePolicy::Auto;
  int row_vectors = 4;       // vectors per thread a cached row schedule aims for
  int row_single_pass_vectors = 16;  // the same for rows read once (nothing kept across passes)
  // Cached rows aim for at least this many threads a row, as far as the row has vectors (rows
  // whose team aims for tuning().row_team aside): a short row's vectors spread over more threads
  // (see plan_team in reduction_layout.cpp).
  int row_min_threads = 4;
  // Cached rows whose teams are a warp or less: threads per block, the teams sharing it (a power
  // of two from 32 to 256; see plan_reduction_layout).
  int row_team_block = 256;
  // Rows too long for one block's registers: at most this many blocks of a thread-block cluster
  // share one row, each keeping its slice and exchanging partial reductions through distributed
  // shared memory (1: none; such rows loop over global memory instead).
  int row_cluster = 8;
  // Registers per thread a cached row may fill with its elements (0: by block size, see
  // cache_budget in reduction_layout.cpp); rows that do not fit loop or take a cluster. Measured
  // H200: bf16 softmax rows of 65536 kept in registers (64, one 1024-thread block per
  // multiprocessor) took 115.8 us against 101.5 looped.
  int row_cache_registers = 0;
  int row_team = 128;        // threads per row first-pass rows aim for (0: from row_vectors; see reduction_layout.cpp)
  int row_waves = 0;           // cached rows: grid-stride rounds of a full device (0: by row_rounds;
                              // measured H200: 4-10% faster than 1 round on the suite's rows)
  int row_rounds = 0;         // cached rows: row teams each block takes in turn (0: 2 for rows of
                              // 16-bit inputs, else 1; see choose_row_rounds in reduction_layout.cpp)
  // Cached rows too few to fill the device with their teams (a model's 128 or 1024 rows at batch 1
  // or 8): teams widen, fewer vectors a thread down to one, until the rows' threads make this many
  // per multiprocessor, and each block takes one row group (0: teams as planned; see
  // widen_teams_for_few_rows in reduction_layout.cpp).
  int row_fill = 1024;
  // Cached rows: inputs a later pass reads first (a layer norm's weight and bias) are loaded with
  // the first pass's, into registers, so their loads wait out the same memory latency instead of
  // one more after the reductions: at most this many registers per thread (-1: 16; 0: none; see
  // RowKernel::choose_early_inputs in row_reduction.cpp).
  int row_early_loads = -1;
  // Block-wide row teams: the reductions one pass accumulates share one barrier round, and no
  // barrier follows it (their shared slots alternate by row group; tf_block_publish in the
  // prelude); 0: a tf_block_reduce each, two barriers apiece.
  int row_shared_rounds = 1;
  // Looped rows: blocks per multiprocessor (0: as many as fill its threads while the rows in
  // flight fill at most 3/4 of L2, so that the passes' re-reads still hit it; measured H200 rows
  // of 65536 (1024-thread blocks): bf16 11% faster with 2 than 1, f32 3% slower).
  int looped_blocks_per_sm = 0;
  // Looped rows of vectors: each thread loads this many vectors (a team stride apart) before
  // working through them, so that more loads are in flight per thread (0: see
  // choose_looped_unroll in reduction_layout.cpp).
  int looped_unroll = 0;
  int column_unroll = 8;     // rows each thread loads before accumulating (column schedule)
  // Column groups of several passes (softmax or a normalization over a leading dim): the values
  // of its element inputs a thread may keep in registers across the passes, with 512 threads a
  // block (half as many with 256), so that the column is read from memory once (0: none, every
  // pass reads the column again through L2; see choose_column_cache in reduction_layout.cpp).
  int column_cache = 64;
  // Column blocks per multiprocessor the split aims for (1 to kColumnBlocksPerSm). Measured H200
  // col_sum, two runs each: bf16 41.2-41.3 us with 4, 40.5-40.8 with 2, 41.0-41.1 with 3, 44.0
  // with 1; f32 74.6-74.7, 74.4-74.6, 75.0-75.1, 89.2 (fewer partial rows for the last block).
  int column_blocks = 2;
  // One-pass column reductions: threads along the reduced dim a block (8, 16 or 32; fewer where
  // the block's partial rows would outgrow shared memory).
  int column_rows = 16;
  // One-pass column reductions: threads across the kept inner dims a tile (8, 16 or 32; a tile of
  // that many times the vector's columns). 16 with column_rows=16 is Inductor's shape for
  // sum_middle f32 (64 columns a block, blocks of 256, no split). Measured H200, categories'
  // sum_middle / sum_dim0 f32 us, two processes: 16.1-16.2 / 15.7-15.9 at 16 x 16, 17.5-18.1 /
  // 17.7-17.9 at 32 x 8 (the earlier default); bf16 within the timer's spread (11.3-12.2 either).
  int column_tile_threads = 16;
  // One-pass column reductions: how each thread adds its rows of a float sum before the block's
  // double partial rows (0: each element converted to double and added; 1: a compensated (Kahan)
  // float sum, an error of a few float roundings whatever the rows; 2: a plain float sum, whose
  // error grows with the rows a thread adds, as eager's does).
  int column_float_sums = 0;
  // Column groups of several passes over few, long columns (softmax over dim 0 of [16384, 2048]):
  // blocks of 256 threads per multiprocessor the split of each tile's rows aims for (0: no split,
  // a block per tile; see choose_column_pass_split in reduction_layout.cpp). The launch caps it
  // by the kernel's occupancy, since the split blocks wait for each other between passes.
  int column_pass_blocks = 4;
  // Split column passes that loop over their rows: rows each thread loads (all loads first)
  // before computing them. Measured H200, softmax over dim 0 of [16384, 2048], f32 / bf16 us:
  // 209.5 / 180.4 with 2, 174.5 / 138.6 with 4, 147.5 / 115.3 with 8. H100, that softmax and
  // x - x.mean(0) on [16384, 4096], f32 / bf16: 191.9 / 127.4 and 297.2 / 173.6 with 8; 191.6 /
  // 121.2 and 290.9 / 163.3 with 12; 191.0 / 117.4 and 291.6 / 170.2 with 16 (62 registers).
  int column_pass_unroll = 12;
  // 1: looped column passes over a contiguous inner dim take 16-byte vectors of adjacent columns
  // a thread (a warp reads 512 bytes of a row, not 64 or 128), tiles of 32 vectors; cached column
  // passes keep one column a thread. Off by default: measured H200 (before the split exchange
  // took a warp row at a time), softmax over dim 0 of [16384, 2048] f32 / bf16 246 / 715 us with
  // vectors against 143 / 110 without, x - x.mean(0) on [16384, 4096] 233 / 236 against 213 / 134;
  // the shorter column cases moved by under 10% either way.
  int column_pass_vectors = 0;
  // Split column passes with vectors: rows each thread loads (all loads first) before computing
  // them (a row is a vector a thread, so fewer than column_pass_unroll's single columns).
  int column_pass_vector_unroll = 4;
  // Split column passes whose element inputs outgrow L2 (x - x.mean(0) on [16384, 4096]): KiB of
  // them one wave of tiles may hold between its passes; the grid takes that many tiles at once
  // and each block loops over its tiles in waves, so that the later passes re-read a wave's
  // columns from L2, not memory (-1: three quarters of the device's L2, for inputs larger than
  // L2; 0: every tile at once, each pass reading the columns from memory again). See
  // choose_column_pass_split. Off by default: measured H200 (docs/performance.md), the waves
  // made the tall cases 0-15% slower (x - x.mean(0) on [16384, 4096] bf16 151.3 us against 131.5).
  int column_pass_wave_kb = 0;
  // 1: split column passes taken in waves load their first pass's rows asking L2 to evict them
  // last, their last pass's rows and element outputs first (under cache_hints other than 0).
  int column_pass_wave_hints = 1;
  // Split column passes, n > 0: a launch per pass, the kernel's end in place of the tiles'
  // barriers, aiming at n blocks of 256 threads per multiprocessor (no cooperative launch, so
  // no residency cap), the rows looped from memory in every pass (never kept in registers across
  // launches); 0: one cooperative launch whose blocks meet at each tile's barrier. See
  // choose_column_pass_split.
  int column_pass_launches = 0;
  // Column groups whose last pass only writes element values from their element inputs and
  // the columns' totals (x - x.mean(0)): KiB of element inputs above which such a group is cut at
  // its reductions, the last pass becoming a pointwise group of its own (passes/cut_column_epilogues.h).
  // Past L2 the fused kernel's second read misses anyway, and a pointwise kernel streams faster
  // than column passes do. 16-bit element inputs from a quarter of it. -1: twice the device's L2
  // (so half of it for 16-bit inputs); 0: never cut.
  int column_cut_kb = -1;
  int chunk_sums = 1;        // looped rows add each vector's lanes in float before the double sum
                             // (H200 rows of 65536: bf16 5% faster, f32 1%)
  // Vectors each thread loads before accumulating (full reductions; 0: 2 where every input they
  // stream is 16-bit, else 1). Measured H200 mean_sq_full, 4 runs each: bf16 41.4-41.5 us with 1,
  // 40.6-40.8 with 2, 40.7 with 4; f32 74.8-74.9 with 1, 75.4 with 2, 79.9 with 4.
  int full_unroll = 0;
  // Row schedules accumulate sum(exp(x - max(x))) in the pass that computes max(x), as a running
  // max and a rescaled sum (see OnlineSum in reduction_analysis.h); 0: a pass of its own.
  int online_softmax = 1;
  int online_min_row = 4096;  // ...on rows of at least this many elements (see plan_reduction_layout)
  // Split column passes that loop over their rows (softmax or log_softmax over dim 0 of a tall
  // tensor) take their softmax sums the same way, so the columns are read once less (0: a pass
  // of their own; see ColumnUnit in schedule.cpp).
  int column_online = 1;
  // Row kernels ask NVRTC for registers that let this many blocks share a multiprocessor
  // (__launch_bounds__'s second argument; 0: no request).
  int row_min_blocks = 0;
  // Cached rows: each team prefetches the row it takes next into L2 (sm_90+) while it works on
  // the current one (1: every cached row, 0: none, -1: where measured to pay, see
  // choose_row_prefetch in reduction_layout.cpp; those take 4 rows per block).
  int row_prefetch = -1;
  // Cheaper forms of exp, sigmoid, SiLU, 1 + tanh, 1 + erf and GELU where they are accurate enough (see
  // docs/architecture.md, "Fast math"); 0: the CUDA math library's everywhere.
  int fast_math = 1;
  // L2 cache hints on the loads and stores a kernel streams (sm_80+; see choose_cache_hints in
  // codegen/cache_hints.cpp): -1 where measured to pay, 0 none, 1 every kernel.
  int cache_hints = -1;
  // Rows read more than once (sm_90+): the inputs read again are staged in shared memory, one bulk
  // copy per row and input (see choose_row_staging in reduction_layout.cpp): -1 where measured to
  // pay (one buffer), 0 never, N > 0 wherever possible, with a ring of up to N buffers per block
  // (as many as still let two blocks share a multiprocessor), the next rows loading while a
  // block works on one.
  int row_stage = -1;
  // Looped rows (sm_90+) whose inputs read again fit shared memory: those inputs stream through a
  // ring of chunks in shared memory, bulk copies filling each chunk as soon as the last pass frees
  // it, so every pass after the loads reads the row on chip and the next row loads while the
  // current one is written (see choose_row_ring in reduction_layout.cpp): -1 where measured to
  // pay, 0 never, 1 wherever possible.
  int row_ring = -1;
  int row_ring_vectors = 0;  // ...each chunk holding this many vectors per thread (0: the most of 4, 2, 1 that fit)
  // Rows a block keeps on chip for its later passes (registers, or shared memory: staged and
  // ringed rows): their loads and bulk copies ask L2 to keep the lines (evict-last), as Triton's
  // row kernels do (see choose_cache_hints in codegen/cache_hints.cpp): -1 where measured to
  // pay, 0 never, 1 always.
  int row_hold = -1;
  // Inputs several rows read (an attention mask broadcast over batch and heads, a layer norm's
  // weights): their loads ask L2 to keep the lines (evict-last) and stay in L1, as Triton's do
  // (see choose_cache_hints): -1 where one of them differs between rows (a mask: measured to
  // pay; weights lost), 0 never, 1 always.
  int shared_hold = -1;
  // Cached rows whose length fills every thread's vectors exactly (threads per row x vectors per
  // thread x vector width): the kernel takes the length as a constant and loads with no column
  // bounds checks, so a pass's loads issue back to back (see plan_reduction_layout); 0: never.
  int row_exact = 1;
  // Few cached rows (see row_fill) whose widened teams keep one vector a thread and leave threads
  // idle, where the row's vectors make whole warps (bf16 rows of 768: 96 vectors in teams of 128):
  // 1 gives the team exactly one thread a vector (96, three warps), so the row fills it exactly
  // (row_exact); 0: teams stay a power of two (see fit_teams_to_whole_warps in reduction_layout.cpp).
  int row_whole_warps = 0;
};

// Parses "name=value,..." over `base`; a malformed entry is an Error naming `origin` (where the
// text came from: "TORCHFUSE_TUNE", "CompileOptions::tune").
Tuning parse_tuning(const std::string& spec, const Tuning& base = Tuning{}, const std::string& origin = "TORCHFUSE_TUNE");

}  // namespace codegen
}  // namespace torchfuse
