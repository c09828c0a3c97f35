// The shapes of the IR's views, as eager computes them: view_output_sizes for the type checks
// (frontend, verifier), view_range and select_index for the ranges that slice, narrow, chunk,
// split and select take of a dim. The runtime applies the same functions to each call's sizes
// (passes/view_steps.cpp), so that the kernel reads what eager's views would.
#include <algorithm>

#include "src/ir.h"

namespace torchfuse {
namespace ir {

namespace {

// Piece `index` of a split of a dim of size `size` into pieces of `split_size` (the last one
// shorter), as aten::split computes it; `count` the number of pieces the list must have (-1:
// any), `index` negative counted from the end.
std::optional<DimRange> split_piece(int64_t split_size, int64_t index, int64_t count, int64_t size) {
  if (split_size <= 0 || size < 0) return std::nullopt;
  // aten::split: at least one piece (a split_size past the dim gives the whole dim).
  const int64_t pieces = std::max<int64_t>((size + split_size - 1) / split_size, 1);
  if (count >= 0 && pieces != count) return std::nullopt;
  const int64_t i = index < 0 ? index + pieces : index;
  if (i < 0 || i >= pieces) return std::nullopt;
  DimRange r;
  r.start = i * split_size;
  r.length = i < pieces - 1 ? split_size : size - split_size * (pieces - 1);
  return r;
}

// Piece `index` of aten::chunk(chunks) of a dim of size `size`: split(ceil(size / chunks)),
// except that a dim of size 0 makes `chunks` empty pieces.
std::optional<DimRange> chunk_piece(int64_t chunks, int64_t index, int64_t count, int64_t size) {
  if (chunks <= 0 || size < 0) return std::nullopt;
  if (size == 0) {
    if (count >= 0 && count != chunks) return std::nullopt;
    const int64_t i = index < 0 ? index + chunks : index;
    if (i < 0 || i >= chunks) return std::nullopt;
    return DimRange{};
  }
  return split_piece((size + chunks - 1) / chunks, index, count, size);
}

// aten::slice: negative ends count from the end, then both are clamped to [0, size], and the
// end to the start at least.
std::optional<DimRange> slice_range(int64_t start, int64_t end, int64_t step, int64_t size) {
  if (step <= 0 || size < 0) return std::nullopt;
  if (start < 0) start = std::max<int64_t>(start + size, 0);
  if (end < 0) end = std::max<int64_t>(end + size, 0);
  start = std::min(start, size);
  end = std::min(std::max(end, start), size);
  DimRange r;
  r.start = start;
  r.length = (end - start + step - 1) / step;
  r.step = step;
  return r;
}

// aten::narrow: start in [-size, size] (negative counted from the end), and start + length
// within the dim; a split_with_sizes piece also needs the dim to have size `total`.
std::optional<DimRange> narrow_range(const std::vector<int64_t>& dims, int64_t size) {
  if (dims.size() != 3 && dims.size() != 4) return std::nullopt;
  if (dims.size() == 4 && size != dims[3]) return std::nullopt;
  int64_t start = dims[1];
  const int64_t length = dims[2];
  if (length < 0 || start < -size || start > size) return std::nullopt;
  if (start < 0) start += size;
  if (start > size - length) return std::nullopt;
  DimRange r;
  r.start = start;
  r.length = length;
  return r;
}

// The dim the view acts on, when it is one of `rank` dims.
bool dim_in_range(const std::vector<int64_t>& dims, size_t min_dims, int64_t rank) {
  return dims.size() >= min_dims && dims[0] >= 0 && dims[0] < rank;
}

// view(sizes): at most one -1, inferred so that the element count stays; eager's infer_size.
std::optional<std::vector<int64_t>> reshape_sizes(const std::vector<int64_t>& target, const std::vector<int64_t>& in) {
  int64_t numel = 1;
  for (int64_t s : in) numel *= s;
  int64_t known = 1;
  int infer = -1;
  for (size_t j = 0; j < target.size(); ++j) {
    if (target[j] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(j);
    } else if (target[j] < 0) {
      return std::nullopt;
    } else {
      known *= target[j];
    }
  }
  std::vector<int64_t> out = target;
  if (infer >= 0) {
    // (-1 beside a 0: eager cannot infer it.)
    if (known == 0 || numel % known != 0) return std::nullopt;
    out[static_cast<size_t>(infer)] = numel / known;
  } else if (known != numel) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<int64_t>> expand_sizes(const std::vector<int64_t>& target, const std::vector<int64_t>& in) {
  if (target.size() < in.size()) return std::nullopt;
  const size_t lead = target.size() - in.size();
  std::vector<int64_t> out;
  for (size_t j = 0; j < target.size(); ++j) {
    const int64_t t = target[j];
    if (j < lead) {
      if (t < 0) return std::nullopt;  // a new dim needs a size
      out.push_back(t);
      continue;
    }
    const int64_t s = in[j - lead];
    if (t == -1 || t == s) out.push_back(s);
    else if (s == 1 && t >= 0) out.push_back(t);
    else return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<DimRange> view_range(OpKind kind, const std::vector<int64_t>& dims, int64_t size) {
  switch (kind) {
    case OpKind::Slice:
      if (dims.size() != 4) return std::nullopt;
      return slice_range(dims[1], dims[2], dims[3], size);
    case OpKind::Narrow:
      return narrow_range(dims, size);
    case OpKind::Chunk:
      if (dims.size() != 4) return std::nullopt;
      return chunk_piece(dims[1], dims[2], dims[3], size);
    case OpKind::Split:
      if (dims.size() != 4) return std::nullopt;
      return split_piece(dims[1], dims[2], dims[3], size);
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> select_index(const std::vector<int64_t>& dims, int64_t size) {
  if (dims.size() != 2 && dims.size() != 3) return std::nullopt;
  if (dims.size() == 3 && size != dims[2]) return std::nullopt;
  const int64_t i = dims[1] < 0 ? dims[1] + size : dims[1];
  if (i < 0 || i >= size) return std::nullopt;
  return i;
}

std::optional<std::vector<int64_t>> view_output_sizes(OpKind kind, const std::vector<int64_t>& dims,
                                                      const std::vector<int64_t>& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> out;
  switch (kind) {
    case OpKind::Permute: {
      if (static_cast<int64_t>(dims.size()) != rank) return std::nullopt;
      std::vector<char> used(in.size(), 0);
      for (int64_t d : dims) {
        if (d < 0 || d >= rank || used[d]) return std::nullopt;
        used[d] = 1;
        out.push_back(in[d]);
      }
      return out;
    }
    case OpKind::Unsqueeze: {
      out = in;
      if (!std::is_sorted(dims.begin(), dims.end())) return std::nullopt;
      for (int64_t d : dims) {
        if (d < 0 || d > static_cast<int64_t>(out.size())) return std::nullopt;
        out.insert(out.begin() + d, 1);
      }
      return out;
    }
    case OpKind::Squeeze: {
      if (!std::is_sorted(dims.begin(), dims.end()) || std::adjacent_find(dims.begin(), dims.end()) != dims.end()) {
        return std::nullopt;
      }
      for (int64_t d : dims)
        if (d < 0 || d >= rank || in[d] != 1) return std::nullopt;
      for (int64_t d = 0; d < rank; ++d)
        if (!std::binary_search(dims.begin(), dims.end(), d)) out.push_back(in[d]);
      return out;
    }
    case OpKind::Flatten: {
      if (dims.size() != 2 || dims[0] < 0 || dims[0] >= dims[1] || dims[1] >= rank) return std::nullopt;
      int64_t merged = 1;
      for (int64_t d = 0; d < rank; ++d) {
        if (d < dims[0] || d > dims[1]) out.push_back(in[d]);
        else merged *= in[d];
        if (d == dims[1]) out.push_back(merged);
      }
      return out;
    }
    case OpKind::Reshape:
      return reshape_sizes(dims, in);
    case OpKind::Slice: case OpKind::Narrow: case OpKind::Chunk: case OpKind::Split: {
      if (!dim_in_range(dims, 1, rank)) return std::nullopt;
      const auto r = view_range(kind, dims, in[dims[0]]);
      if (!r) return std::nullopt;
      out = in;
      out[dims[0]] = r->length;
      return out;
    }
    case OpKind::Select: {
      if (!dim_in_range(dims, 1, rank) || !select_index(dims, in[dims[0]])) return std::nullopt;
      out = in;
      out.erase(out.begin() + dims[0]);
      return out;
    }
    case OpKind::Expand:
      return expand_sizes(dims, in);
    case OpKind::Contiguous:
      if (!dims.empty()) return std::nullopt;
      return in;
    case OpKind::CatPiece: {
      // [dim, index, offset, total]: the piece laid into its range of the cat's dim.
      if (dims.size() != 4 || !dim_in_range(dims, 1, rank) || dims[2] < 0 || dims[2] + in[dims[0]] > dims[3]) {
        return std::nullopt;
      }
      out = in;
      out[dims[0]] = dims[3];
      return out;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace ir
}  // namespace torchfuse
