// Launch-time layout of a pointwise iteration: the domain with mergeable dims coalesced, and how
// each operand is addressed. Kernels are generated for the compile-time part of a layout (rank,
// access kinds, dtypes, vector width, index width); sizes and strides are kernel arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "codegen/cache_hints.h"
#include "codegen/tuning.h"

namespace torchfuse {
namespace codegen {

enum class Access {
  Linear,          // contiguous over the whole domain: element i is at i
  InnerContig,     // innermost stride 1, other strides arbitrary
  InnerBroadcast,  // innermost stride 0 (e.g. a [M, 1] operand)
  Strided,         // any other strides
  Uniform,         // one element for the whole domain (0-dim tensor, or every stride 0)
  Scalar,          // a number passed by value
};
const char* access_name(Access a);

// An operand as seen by the planner: a tensor (sizes/strides) or a number.
struct OperandShape {
  bool is_tensor = true;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  // Elements from the tensor's data pointer to the operand's first one: where the group's views
  // take a range or an index of the input (a slice). Launches pass the pointer moved by it.
  int64_t offset = 0;
};

struct OperandLayout {
  Access access = Access::Linear;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> strides;  // per coalesced dim (tensors that are not Linear/Uniform)
  bool shared = false;           // an element serves several indices (stride 0 over a dim of size > 1)
  bool tiled = false;            // read through the tile in shared memory (PointwiseLayout::tile_dim)
};

// A cat of the group on one call: the domain dim its pieces are laid along, and where each
// piece after the first starts in it.
struct CatSplit {
  int64_t dim = 0;
  std::vector<int64_t> starts;
};
// The same in the coalesced domain: the coalesced dim whose outermost part is the cat's dim
// (it never merges into an outer neighbour), and each start times the sizes merged inside it.
struct CatLayout {
  int64_t dim = 0;
  std::vector<int64_t> bounds;  // kernel arguments, not part of the key
};

struct PointwiseLayout {
  std::vector<int64_t> sizes;          // coalesced domain, outermost first (rank >= 1)
  std::vector<OperandLayout> inputs;   // per group input
  std::vector<c10::ScalarType> outputs;  // output dtypes (outputs are contiguous)
  int vec = 1;                         // elements per vector access on the fast path
  int unroll = 1;                      // vectors each thread loads before computing (fast path)
  bool index64 = false;                // 64-bit index math needed
  bool fast_math = true;               // Tuning::fast_math when planned (it changes the source)
  CacheHints hints;                    // L2 hints on its vector loads and stores (choose_cache_hints)
  std::vector<CatLayout> cats;         // per cat of the group (FusionGroup::cats)
  // A tiled layout (tile_dim >= 0): inputs whose fastest dim is coalesced dim `tile_dim` rather
  // than the innermost one (a transposed operand) are read `tile` x `tile` elements at a time
  // along their own fastest dim into shared memory, and every element is computed and written
  // along the innermost dim from there, so that both the transposed reads and the writes are
  // coalesced (as Inductor's and nvFuser's transpose schedules do). No unroll; `vec` is the
  // elements a thread takes along the contiguous dims where the launch finds them aligned.
  int tile_dim = -1;
  int tile = 0;
  int64_t numel() const;
  // The compile-time part, as text: equal keys mean one kernel serves both layouts.
  std::string key() const;
};

// Plans the layout of a pointwise iteration over `domain` (outputs contiguous over it).
// With `cats`, each cat's dim starts a coalesced dim, and vectors are not unrolled.
PointwiseLayout plan_pointwise_layout(const std::vector<int64_t>& domain, const std::vector<OperandShape>& inputs,
                                      const std::vector<c10::ScalarType>& outputs, int64_t max_threads,
                                      const Tuning& tune, const std::vector<CatSplit>& cats = {});

// Tiles a pointwise layout (PointwiseLayout::tile_dim) where an input is transposed against the
// output: its stride is 1 along a coalesced dim other than the innermost, and both dims hold at
// least half a tile. The dim most such input bytes are contiguous along is tiled. Returns whether
// it tiled. (Layouts with cats keep their per-element pieces: not tiled.)
bool tile_transposed_inputs(PointwiseLayout& layout, const Tuning& tune);

// Coalesces dims [lo, hi) of `domain` across every operand's strides (one stride vector per
// operand, over the whole domain): size-1 dims drop, a dim merges into its outer neighbour when
// every operand allows. Appends the merged sizes and each operand's merged strides.
// `keep_apart`: dims that never merge into their outer neighbour; `coalesced_of`: each dim's
// coalesced dim (-1 for dropped size-1 dims).
void coalesce_dims(const std::vector<int64_t>& domain, int64_t lo, int64_t hi,
                   const std::vector<std::vector<int64_t>>& strides, std::vector<int64_t>& sizes_out,
                   std::vector<std::vector<int64_t>>& strides_out, const std::vector<int64_t>& keep_apart = {},
                   std::vector<int64_t>* coalesced_of = nullptr);

// Does some element serve several indices: a stride 0 over a dim of size > 1?
bool has_broadcast_dim(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

// Elements per 16-byte access for the widest vector-accessed operand.
int choose_vector_width(const std::vector<OperandLayout>& inputs, const std::vector<c10::ScalarType>& outputs);

}  // namespace codegen
}  // namespace torchfuse
