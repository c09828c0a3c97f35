// aten::chunk, split, split_with_sizes and unbind return a list, which TorchScript reads through
// prim::ListUnpack (`a, b = x.chunk(2, -1)`) or aten::__getitem__ with a constant index
// (`x.chunk(2, -1)[1]`). Each tensor read is a view of the split tensor, piece i of the split:
// an IR Chunk, Split, Narrow (split_with_sizes) or Select (unbind) whose range the runtime takes
// from each call's sizes (ir::view_range). The list's op becomes no IR node (its list an Other
// value); the nodes reading the list become the views (ConvertContext::defer_pieces, then
// emit_pieces), each output its own fusion unit, so that one piece can fuse while another stays
// a view in ATen. A ListUnpack fixes the number of pieces (eager raises when the list has
// another length): the views carry it, and a call whose sizes make another number falls back.
// The list's op converts only when every use of its list is such a read in the graph's top
// level; otherwise (a list passed to cat, returned, read in a loop) it stays in ATen.
#include <torch/csrc/jit/ir/ir.h>

#include "src/convert_context.h"
#include "src/error.h"

namespace torchfuse {
namespace {

using ir::OpKind;
using Piece = ConvertContext::Piece;

// A node that reads the list: its outputs are pieces `index` (a constant __getitem__ index), or
// all pieces in order (a ListUnpack: index unset).
struct Reader {
  torch::jit::Node* node = nullptr;
  std::optional<int64_t> index;
};

// The reads of the node's list, or nullopt (declined) when a use is no read the views handle.
std::optional<std::vector<Reader>> list_readers(ConvertContext& ctx) {
  const torch::jit::Node* n = ctx.node();
  std::vector<Reader> readers;
  for (const torch::jit::Use& u : n->output()->uses()) {
    torch::jit::Node* user = u.user;
    const std::string who = std::string(user->kind().toQualString()) +
                            (user->outputs().empty() ? "" : " (%" + user->output(0)->debugName() + ")");
    if (user->owningBlock() != n->owningBlock()) {
      ctx.decline("its list is read inside control flow, by " + who);
      return std::nullopt;
    }
    if (user->kind() == c10::prim::ListUnpack) {
      readers.push_back({user, std::nullopt});
      continue;
    }
    if (user->kind() != c10::aten::__getitem__ || u.offset != 0) {
      ctx.decline("its list is read by " + who + " (only unpacking and indexing by a constant are fused)");
      return std::nullopt;
    }
    auto index = torch::jit::toIValue(user->input(1));
    if (!index || !index->isInt()) {
      ctx.decline("its list is indexed by an int computed at run time, in " + who);
      return std::nullopt;
    }
    readers.push_back({user, index->toInt()});
  }
  if (readers.empty()) ctx.decline("its list is not read");
  if (readers.empty()) return std::nullopt;
  return readers;
}

// Piece `index` of the split as a view, for a list that has `count` pieces (-1: any number).
using PieceOf = std::function<std::optional<Piece>(int64_t index, int64_t count)>;

// The profiled type of a piece is that view of x.
bool piece_matches(const ir::Value* x, const Piece& p, const ir::Type& t) {
  const auto sizes = ir::view_output_sizes(p.kind, p.dims, x->type.sizes);
  return sizes && t.is_tensor() && t.sizes == *sizes && t.dtype == x->type.dtype && t.device == x->type.device;
}

// Records the pieces every reader of the list takes (converted when the readers are reached)
// and binds the list to an Other value; declines when a read is not a view of x it can name.
bool defer_list_reads(ConvertContext& ctx, ir::Value* x, const PieceOf& piece_of) {
  auto readers = list_readers(ctx);
  if (!readers) return false;
  std::vector<std::pair<const torch::jit::Node*, ConvertContext::Pieces>> deferred;
  for (const Reader& r : *readers) {
    ConvertContext::Pieces pieces;
    pieces.input = x;
    const int64_t outputs = static_cast<int64_t>(r.node->outputs().size());
    for (int64_t j = 0; j < outputs; ++j) {
      const torch::jit::Value* out = r.node->output(j);
      auto piece = r.index ? piece_of(*r.index, -1) : piece_of(j, outputs);
      if (!piece) return ctx.decline("%" + out->debugName() + " is no piece of the split of " + x->type.str());
      const ir::Type& t = ctx.type_of(out);
      if (!piece_matches(x, *piece, t)) {
        return ctx.decline("%" + out->debugName() + ": the profiled " + t.str() + " is not the " + ir::op_name(piece->kind) +
                           ir::shape_str(piece->dims) + " of the input " + x->type.str());
      }
      pieces.outputs.push_back(std::move(*piece));
    }
    deferred.emplace_back(r.node, std::move(pieces));
  }
  for (auto& [node, pieces] : deferred) ctx.defer_pieces(node, std::move(pieces));
  ctx.bind_output(0, ctx.graph().add_other());
  return true;
}

// The split tensor, of rank 1 at least; declines otherwise.
ir::Value* split_input(ConvertContext& ctx, size_t args) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(args)) return nullptr;
  if (x->type.rank() == 0) {
    ctx.decline(ctx.op_name() + " of a 0-dim tensor");
    return nullptr;
  }
  return x;
}

// chunk(self, chunks, dim).
bool convert_chunk(ConvertContext& ctx) {
  ir::Value* x = split_input(ctx, 3);
  if (!x) return false;
  auto chunks = ctx.constant(1);
  if (!chunks || !chunks->isInt()) return ctx.decline(ctx.arg_name(1) + " is not a constant int");
  if (chunks->toInt() <= 0) return ctx.decline(ctx.arg_str(1) + ": chunk needs at least one chunk");
  auto dim = dim_arg(ctx, 2, x->type.rank());
  if (!dim) return false;
  const int64_t n = chunks->toInt();
  return defer_list_reads(ctx, x, [&](int64_t index, int64_t count) -> std::optional<Piece> {
    return Piece{OpKind::Chunk, {*dim, n, index, count}};
  });
}

// Pieces of split_with_sizes: narrows at the running sums of `sizes`; the dim must have their sum.
bool defer_sized_pieces(ConvertContext& ctx, ir::Value* x, int64_t dim, const std::vector<int64_t>& sizes) {
  int64_t total = 0;
  std::vector<int64_t> starts;
  for (int64_t s : sizes) {
    if (s < 0) return ctx.decline(ctx.arg_str(1) + ": split sizes must be non-negative");
    starts.push_back(total);
    total += s;
  }
  const int64_t n = static_cast<int64_t>(sizes.size());
  return defer_list_reads(ctx, x, [&](int64_t index, int64_t count) -> std::optional<Piece> {
    if (count >= 0 && count != n) return std::nullopt;
    const int64_t i = index < 0 ? index + n : index;
    if (i < 0 || i >= n) return std::nullopt;
    return Piece{OpKind::Narrow, {dim, starts[i], sizes[i], total}};
  });
}

// split(self, split_size or split_sizes, dim).
bool convert_split(ConvertContext& ctx) {
  ir::Value* x = split_input(ctx, 3);
  if (!x) return false;
  auto dim = dim_arg(ctx, 2, x->type.rank());
  if (!dim) return false;
  auto arg = ctx.constant(1);
  if (arg && arg->isIntList()) return defer_sized_pieces(ctx, x, *dim, arg->toIntVector());
  if (!arg || !arg->isInt()) return ctx.decline(ctx.arg_name(1) + " is neither a constant int nor a constant list of ints");
  // (split_size 0 splits only a dim of size 0, into one piece: left to ATen.)
  if (arg->toInt() <= 0) return ctx.decline(ctx.arg_str(1) + ": only a positive split size is fused");
  const int64_t size = arg->toInt();
  return defer_list_reads(ctx, x, [&](int64_t index, int64_t count) -> std::optional<Piece> {
    return Piece{OpKind::Split, {*dim, size, index, count}};
  });
}

// split_with_sizes(self, split_sizes, dim).
bool convert_split_with_sizes(ConvertContext& ctx) {
  ir::Value* x = split_input(ctx, 3);
  if (!x) return false;
  auto dim = dim_arg(ctx, 2, x->type.rank());
  if (!dim) return false;
  auto arg = ctx.constant(1);
  if (!arg || !arg->isIntList()) return ctx.decline(ctx.arg_name(1) + " is not a constant list of ints");
  return defer_sized_pieces(ctx, x, *dim, arg->toIntVector());
}

// unbind(self, dim): piece i is select(dim, i); unpacked, the dim must have the list's length.
bool convert_unbind(ConvertContext& ctx) {
  ir::Value* x = split_input(ctx, 2);
  if (!x) return false;
  auto dim = dim_arg(ctx, 1, x->type.rank());
  if (!dim) return false;
  return defer_list_reads(ctx, x, [&](int64_t index, int64_t count) -> std::optional<Piece> {
    if (count < 0) return Piece{OpKind::Select, {*dim, index}};
    return Piece{OpKind::Select, {*dim, index, count}};
  });
}

}  // namespace

void emit_pieces(ConvertContext& ctx, const std::function<int(size_t)>& new_origin) {
  const ConvertContext::Pieces* pieces = ctx.pieces_for(ctx.node());
  TORCHFUSE_INTERNAL_ASSERT(pieces != nullptr, "emit_pieces on a node no split converter deferred");
  for (size_t i = 0; i < pieces->outputs.size(); ++i) {
    ctx.set_origin(new_origin(i));
    const Piece& p = pieces->outputs[i];
    // defer_list_reads checked each piece against its profiled type.
    const bool emitted = emit_view(ctx, pieces->input, p.kind, p.dims, i);
    TORCHFUSE_INTERNAL_ASSERT(emitted, "piece ", i, " of ", ctx.node()->kind().toQualString(), ": ", ctx.decline_reason());
  }
}

const std::unordered_map<std::string, Converter>& split_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::chunk", convert_chunk},
      {"aten::split", convert_split},
      {"aten::split_with_sizes", convert_split_with_sizes},
      {"aten::unbind", convert_unbind},
  };
  return table;
}

}  // namespace torchfuse
