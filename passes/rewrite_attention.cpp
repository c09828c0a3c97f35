#include "passes/rewrite_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "src/error.h"
#include "src/ir.h"
#include "src/graph_constants.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The op runtime/attention_op.cpp registers under this name.
const c10::Symbol& attention_op() {
  static const c10::Symbol s = c10::Symbol::fromQualString("torchfuse::attention");
  return s;
}

std::string name(const Value* v) { return "%" + v->debugName(); }

int64_t normalized_dim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

// The two dims aten::transpose(x, d0, d1) swaps, normalized for `rank` and in order; nothing
// when n is no transpose or its dims are not constants.
std::optional<std::pair<int64_t, int64_t>> transposed_dims(const Node* n, int64_t rank) {
  if (!is_kind(n, "aten::transpose") || n->inputs().size() != 3) return std::nullopt;
  const std::optional<c10::IValue> d0 = constant_value(n->input(1));
  const std::optional<c10::IValue> d1 = constant_value(n->input(2));
  if (!d0 || !d1 || !d0->isInt() || !d1->isInt()) return std::nullopt;
  const int64_t a = normalized_dim(d0->toInt(), rank), b = normalized_dim(d1->toInt(), rank);
  return std::make_pair(std::min(a, b), std::max(a, b));
}

// What a pattern turned out to be. `intermediates` are the values only the pattern may read.
struct Attention {
  Node* out = nullptr;  // matmul(probs, value)
  Value* query = nullptr;
  Value* key_t = nullptr;  // key^T as the scores' matmul reads it
  Value* key = nullptr;    // key itself where key_t is its transpose (else null: one is inserted)
  Value* value = nullptr;
  Value* scores = nullptr;  // matmul(query, key_t)
  double scale = 1.0;
  Value* additive_mask = nullptr;
  Value* excluded = nullptr;  // boolean: true where masked_fill/where excludes the position
  Value* kept = nullptr;      // boolean: true where where() keeps the score
  Value* softmax_in = nullptr;
  Node* softmax = nullptr;
  // From the output backwards: the probabilities' casts and dropouts, the softmax (at
  // softmax_index), the mask and scaling steps, the scores.
  std::vector<Value*> intermediates;
  size_t softmax_index = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;  // query's
  // Grouped heads (key and value repeated from fewer heads, as Hugging Face's repeat_kv does):
  // the tensors before the repeat, and how many query heads each of their heads serves.
  Value* key_heads = nullptr;
  Value* value_heads = nullptr;
  int64_t groups = 1;
  // The query goes to the call in the layout the output is read in (see match_output_layout).
  bool query_tokens_major = false;
  // An aten::scaled_dot_product_attention call already: its mask goes to the call as it was
  // (ATen's semantics, not eager softmax's), and its is_causal with it.
  bool from_sdpa = false;
  bool causal = false;
};

// Outcome of matching one candidate: not attention at all (silently skipped), attention the
// rewrite must leave alone (with the reason), or a match.
struct MatchResult {
  bool is_attention = false;
  std::string refusal;
  Attention found;
};

class Matcher {
 public:
  explicit Matcher(const RewriteContext& ctx) : ctx_(ctx) {}

  MatchResult match(Node* out) {
    MatchResult r;
    if (is_kind(out, "aten::scaled_dot_product_attention")) return match_sdpa(out);
    if (!(is_kind(out, "aten::matmul") || is_kind(out, "aten::bmm"))) return r;
    Attention& a = r.found;
    a.out = out;
    a.value = out->input(1);
    Value* probs = skip_to_softmax(out->input(0), a);
    if (!probs) return r;
    r.is_attention = true;
    r.refusal = check_softmax(a);
    if (!r.refusal.empty()) return r;
    r.refusal = match_mask(a.softmax_in, a);
    if (!r.refusal.empty()) return r;
    r.refusal = check_types(a);
    if (!r.refusal.empty()) return r;
    r.refusal = check_single_uses(a);
    if (!r.refusal.empty()) return r;
    match_grouped_heads(a);
    match_output_layout(a);
    return r;
  }

 private:
  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  // aten::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale,
  // enable_gqa) with constant arguments and no dropout: the call takes it over, so that the
  // grouped heads before a repeat, the query's layout and (cache_shape_tensors) a causal check of
  // its mask apply as they do to attention spelled out.
  MatchResult match_sdpa(Node* n) {
    MatchResult r;
    r.is_attention = true;
    r.refusal = read_sdpa_arguments(n, r.found);
    if (!r.refusal.empty()) return r;
    r.refusal = check_sdpa_types(r.found);
    if (!r.refusal.empty()) return r;
    if (r.found.groups == 1) match_grouped_heads(r.found);
    match_output_layout(r.found);
    return r;
  }

  std::string read_sdpa_arguments(Node* n, Attention& a) {
    if (n->inputs().size() < 6 || n->outputs().size() != 1) return "an unknown scaled_dot_product_attention schema";
    a.out = n;
    a.from_sdpa = true;
    a.query = n->input(0);
    a.key = n->input(1);
    a.value = n->input(2);
    const std::optional<double> dropout = constant_number(n->input(4));
    if (!dropout || *dropout != 0.0) return "dropout_p is not a constant 0 (dropout draws random numbers)";
    const std::optional<bool> causal = constant_bool(n->input(5));
    if (!causal) return "is_causal is not a constant";
    a.causal = *causal;
    const ir::Type* q = tensor_type(a.query);
    if (!q || q->rank() < 3) return "the query's type is unknown or of rank below 3";
    a.scale = 1.0 / std::sqrt(static_cast<double>(q->sizes.back()));
    if (n->inputs().size() > 6) {
      const std::optional<c10::IValue> scale = constant_value(n->input(6));
      if (!scale) return "the scale is not a constant";
      if (!scale->isNone()) {
        const std::optional<double> given = constant_number(n->input(6));
        if (!given) return "the scale is not a number";
        a.scale = *given;
      }
    }
    const std::optional<bool> gqa = n->inputs().size() > 7 ? constant_bool(n->input(7)) : std::optional<bool>(false);
    if (!gqa) return "enable_gqa is not a constant";
    const std::optional<c10::IValue> mask = constant_value(n->input(3));
    if (!mask || !mask->isNone()) {
      const ir::Type* m = tensor_type(n->input(3));
      if (!m) return "the mask's type is unknown";
      (m->dtype == c10::ScalarType::Bool ? a.kept : a.additive_mask) = n->input(3);
    }
    if (*gqa) {
      const ir::Type* k = tensor_type(a.key);
      const int64_t r = q->rank();
      if (!k || k->rank() != r || k->sizes[r - 3] == 0 || q->sizes[r - 3] % k->sizes[r - 3] != 0)
        return "enable_gqa with heads that do not divide";
      a.key_heads = a.key;
      a.value_heads = a.value;
      a.groups = q->sizes[r - 3] / k->sizes[r - 3];
    }
    return "";
  }

  std::string check_sdpa_types(Attention& a) {
    const ir::Type* q = tensor_type(a.query);
    const ir::Type* k = tensor_type(a.key);
    const ir::Type* v = tensor_type(a.value);
    if (!q || !k || !v || !tensor_type(a.out->output())) return "the types of query, key or value are unknown";
    a.dtype = q->dtype;
    if (!c10::isFloatingType(a.dtype)) return std::string("query is ") + ir::dtype_short_name(a.dtype) + ", not floating";
    if (k->dtype != a.dtype || v->dtype != a.dtype) return "query, key and value differ in dtype";
    if (q->device != k->device || q->device != v->device) return "query, key and value are on different devices";
    if (k->rank() != q->rank() || v->rank() != q->rank()) return "query, key and value are not of one rank";
    Value* mask = a.additive_mask ? a.additive_mask : a.kept;
    if (!mask) return "";
    const ir::Type* m = tensor_type(mask);
    if (a.additive_mask && m->dtype != a.dtype)
      return std::string("the mask is ") + ir::dtype_short_name(m->dtype) + ", not " + ir::dtype_short_name(a.dtype);
    if (m->rank() > q->rank()) return "the mask has more dims than the scores";
    if (m->device != q->device) return "the mask is on another device";
    return "";
  }

  // probs -> softmax through eval-mode dropout and casts. Returns null when no softmax is there.
  Value* skip_to_softmax(Value* x, Attention& a) {
    for (;;) {
      Node* p = x->node();
      if (is_kind(p, "aten::softmax") || is_kind(p, "aten::_softmax")) {
        a.intermediates.push_back(x);
        a.softmax_index = a.intermediates.size() - 1;
        a.softmax = p;
        a.softmax_in = p->input(0);
        return x;
      }
      const bool dropout = is_kind(p, "aten::dropout") || is_kind(p, "aten::feature_dropout") || is_kind(p, "aten::alpha_dropout");
      if (dropout && p->inputs().size() == 3 && constant_bool(p->input(2)) == false) {
        a.intermediates.push_back(x);
        x = p->input(0);
        continue;
      }
      if (is_kind(p, "aten::to") || is_kind(p, "aten::type_as")) {
        a.intermediates.push_back(x);
        x = p->input(0);
        continue;
      }
      return nullptr;
    }
  }

  std::string check_softmax(Attention& a) {
    const ir::Type* in = tensor_type(a.softmax_in);
    if (!in) return "the softmax input's type is unknown";
    const std::optional<c10::IValue> dim = constant_value(a.softmax->input(1));
    if (!dim || !dim->isInt() || normalized_dim(dim->toInt(), in->rank()) != in->rank() - 1)
      return "softmax is not over the last dim";
    if (is_kind(a.softmax, "aten::_softmax") && constant_bool(a.softmax->input(2)) != false)
      return "_softmax with half_to_float";
    return "";
  }

  // Scores -> scaling -> one optional mask: additive, masked_fill or where with -inf.
  std::string match_mask(Value* x, Attention& a) {
    Node* p = x->node();
    if (is_kind(p, "aten::add") && p->inputs().size() == 3) {
      if (constant_number(p->input(2)) != 1.0) return "the mask is added with alpha != 1";
      a.intermediates.push_back(x);
      if (match_scaled_scores(p->input(0), a)) {
        a.additive_mask = p->input(1);
        return "";
      }
      if (match_scaled_scores(p->input(1), a)) {
        a.additive_mask = p->input(0);
        return "";
      }
      return "neither operand of the add is the scaled matmul(query, key^T)";
    }
    if (is_kind(p, "aten::masked_fill")) {
      a.intermediates.push_back(x);
      const std::string fill = check_minus_inf(p->input(2));
      if (!fill.empty()) return "masked_fill " + fill;
      a.excluded = p->input(1);
      if (!match_scaled_scores(p->input(0), a)) return "masked_fill's input is not the scaled matmul(query, key^T)";
      return "";
    }
    if (is_kind(p, "aten::where") && p->inputs().size() == 3) {
      a.intermediates.push_back(x);
      if (check_minus_inf(p->input(2)).empty() && match_scaled_scores(p->input(1), a)) {
        a.kept = p->input(0);
        return "";
      }
      if (check_minus_inf(p->input(1)).empty() && match_scaled_scores(p->input(2), a)) {
        a.excluded = p->input(0);
        return "";
      }
      return "where() does not pick between the scaled scores and -inf";
    }
    if (match_scaled_scores(x, a)) return "";
    return "the softmax input is not matmul(query, key^T), scaled and masked";
  }

  // -inf: eager's masked positions get exactly 0 weight and fully masked rows NaN, which the
  // attention call reproduces. A finite fill (finfo.min) gives fully masked rows the average of
  // the values instead, which it does not.
  std::string check_minus_inf(Value* fill) {
    const std::optional<double> f = constant_number(fill);
    if (!f) return "fills with a value computed at run time";
    if (*f == -std::numeric_limits<double>::infinity()) return "";
    std::ostringstream os;
    os.imbue(std::locale::classic());
    os << "fills with " << *f << ", not -inf (fully masked rows would differ)";
    return os.str();
  }

  // scores (* c | / c)* where scores = matmul(query, key_t).
  bool match_scaled_scores(Value* x, Attention& a) {
    const size_t mark = a.intermediates.size();
    double scale = 1.0;
    for (;;) {
      Node* p = x->node();
      if ((is_kind(p, "aten::mul") || is_kind(p, "aten::div")) && p->inputs().size() == 2) {
        const bool div = is_kind(p, "aten::div");
        std::optional<double> c = constant_number(p->input(1));
        Value* other = p->input(0);
        if (!c && !div) {
          c = constant_number(p->input(0));
          other = p->input(1);
        }
        if (!c || *c == 0.0 || !std::isfinite(*c)) break;
        scale = div ? scale / *c : scale * *c;
        a.intermediates.push_back(x);
        x = other;
        continue;
      }
      if (is_kind(p, "aten::matmul") || is_kind(p, "aten::bmm")) {
        a.intermediates.push_back(x);
        a.scores = x;
        a.query = p->input(0);
        a.key_t = p->input(1);
        a.scale = scale;
        a.key = key_of(a.key_t);
        return true;
      }
      break;
    }
    a.intermediates.resize(mark);
    return false;
  }

  struct Repeated {
    Value* source = nullptr;
    int64_t groups = 1;
  };

  // x itself, or what a chain of slices taking every element (x[:, :], as tracing records
  // Python's full-range indexing) leaves unchanged.
  Value* through_full_slices(Value* x) {
    for (;;) {
      Node* p = x->node();
      if (!is_kind(p, "aten::slice") || p->inputs().size() != 5 || constant_number(p->input(4)) != 1.0) return x;
      const ir::Type* in = tensor_type(p->input(0));
      const ir::Type* out = tensor_type(x);
      if (!in || !out || in->sizes != out->sizes) return x;  // step 1 and every element: start 0
      x = p->input(0);
    }
  }

  // x = reshape(expand(unsqueeze(source, -3)), ...) repeating each head of `source` (dim -3)
  // `groups` times in place, which is what scaled_dot_product_attention's enable_gqa reads.
  std::optional<Repeated> repeated_heads(Value* x) {
    Node* reshape = x->node();
    if (!is_kind(reshape, "aten::reshape") && !is_kind(reshape, "aten::view")) return std::nullopt;
    Node* expand = through_full_slices(reshape->input(0))->node();
    if (!is_kind(expand, "aten::expand")) return std::nullopt;
    Node* unsqueeze = through_full_slices(expand->input(0))->node();
    if (!is_kind(unsqueeze, "aten::unsqueeze")) return std::nullopt;
    Value* source = through_full_slices(unsqueeze->input(0));
    const ir::Type* src = tensor_type(source);
    const ir::Type* expanded = tensor_type(expand->output());  // [..., heads, groups, S, D]
    const ir::Type* out = tensor_type(x);
    const std::optional<c10::IValue> dim = constant_value(unsqueeze->input(1));
    if (!src || !expanded || !out || !dim || !dim->isInt()) return std::nullopt;
    const int64_t r = src->rank();
    if (r < 3 || normalized_dim(dim->toInt(), r + 1) != r - 2 || expanded->rank() != r + 1 || out->rank() != r)
      return std::nullopt;
    Repeated found{source, expanded->sizes[r - 2]};
    for (int64_t i = 0; i < r; ++i) {
      const int64_t before = src->sizes[i], after = out->sizes[i];
      if (expanded->sizes[i < r - 2 ? i : i + 1] != before) return std::nullopt;
      if (after != (i == r - 3 ? before * found.groups : before)) return std::nullopt;
    }
    return found;
  }

  // Key and value both repeated from fewer heads, by the same number: the call reads them as
  // they were before the repeat (enable_gqa).
  void match_grouped_heads(Attention& a) {
    if (!a.key) return;
    const std::optional<Repeated> k = repeated_heads(a.key), v = repeated_heads(a.value);
    if (!k || !v || k->groups != v->groups || k->groups < 2) return;
    a.key_heads = k->source;
    a.value_heads = v->source;
    a.groups = k->groups;
  }

  // The output read only as out.transpose(1, 2) ([B, L, H, E]: heads merged next) while the query
  // [B, H, L, E] comes from elementwise ops (RoPE's rotation), which a fused kernel writes
  // contiguous: the query goes to the call as a [B, L, H, E] tensor viewed back (the fused kernel
  // computing it writes that layout), and ATen's attention kernels, whose output follows the
  // query's layout, then write the output as it is read, so the transpose's copy goes away.
  void match_output_layout(Attention& a) {
    const ir::Type* q = tensor_type(a.query);
    // (Not the profiled strides: those are eager's, where a fused kernel writes contiguous.)
    if (!q || q->rank() != 4 || q->sizes[1] < 2 || q->sizes[2] < 2) return;
    Node* producer = a.query->node();
    const bool elementwise = is_kind(producer, "aten::add") || is_kind(producer, "aten::sub") ||
                             is_kind(producer, "aten::mul") || is_kind(producer, "aten::div");
    if (!elementwise || a.query->uses().size() != 1) return;
    const auto& uses = a.out->output()->uses();
    if (uses.empty()) return;
    for (const torch::jit::Use& u : uses) {
      if (transposed_dims(u.user, 4) != std::make_pair(int64_t{1}, int64_t{2})) return;
    }
    a.query_tokens_major = true;
  }

  // k where key_t is k.transpose(-2, -1) (or a permute swapping the last two dims).
  Value* key_of(Value* key_t) {
    const ir::Type* t = tensor_type(key_t);
    if (!t) return nullptr;
    const int64_t rank = t->rank();
    Node* p = key_t->node();
    if (is_kind(p, "aten::transpose")) {
      return transposed_dims(p, rank) == std::make_pair(rank - 2, rank - 1) ? p->input(0) : nullptr;
    }
    if (is_kind(p, "aten::permute") && p->inputs().size() == 2) {
      const std::optional<c10::IValue> dims = constant_value(p->input(1));
      if (!dims || !dims->isIntList()) return nullptr;
      const std::vector<int64_t> d = dims->toIntVector();
      if (static_cast<int64_t>(d.size()) != rank) return nullptr;
      for (int64_t i = 0; i < rank - 2; ++i)
        if (normalized_dim(d[i], rank) != i) return nullptr;
      if (normalized_dim(d[rank - 2], rank) != rank - 1 || normalized_dim(d[rank - 1], rank) != rank - 2) return nullptr;
      return p->input(0);
    }
    return nullptr;
  }

  std::string check_types(Attention& a) {
    const ir::Type* q = tensor_type(a.query);
    const ir::Type* kt = tensor_type(a.key_t);
    const ir::Type* v = tensor_type(a.value);
    const ir::Type* s = tensor_type(a.scores);
    const ir::Type* out = tensor_type(a.out->output());
    if (!q || !kt || !v || !s || !out) return "the types of query, key or value are unknown";
    const c10::ScalarType dt = q->dtype;
    a.dtype = dt;
    if (!c10::isFloatingType(dt)) return std::string("query is ") + ir::dtype_short_name(dt) + ", not floating";
    if (kt->dtype != dt || v->dtype != dt) return "query, key and value differ in dtype";
    if (q->device != kt->device || q->device != v->device) return "query, key and value are on different devices";
    const int64_t r = q->rank();
    if (r < 3 || kt->rank() != r || v->rank() != r) return "query, key and value are not of one rank (3 or more)";
    for (int64_t i = 0; i < r - 2; ++i)
      if (kt->sizes[i] != q->sizes[i] || v->sizes[i] != q->sizes[i])
        return "query, key and value broadcast over their batch dims";
    if (kt->sizes[r - 2] != q->sizes[r - 1] || v->sizes[r - 2] != kt->sizes[r - 1])
      return "query, key and value shapes do not chain";
    // Every step keeps the scores' shape (a mask that broadcasts them bigger is not a mask), and
    // up to the softmax their dtype too (a mask of another dtype would promote the scores).
    for (size_t i = 0; i < a.intermediates.size(); ++i) {
      const ir::Type* t = tensor_type(a.intermediates[i]);
      if (!t) return "an intermediate's type is unknown";
      if (t->sizes != s->sizes) return "the mask broadcasts the scores to " + t->str();
      if (t->device != q->device) return "a step moves the scores to another device";
      if (i > a.softmax_index && t->dtype != dt) {
        return name(a.intermediates[i]) + " is " + ir::dtype_short_name(t->dtype) + " while query is " +
               ir::dtype_short_name(dt) + " (a mask of another dtype promotes the scores)";
      }
      // From the softmax on: computed in float, rounded once to the inputs' dtype.
      if (i <= a.softmax_index && t->dtype != dt && t->dtype != c10::ScalarType::Float &&
          t->dtype != c10::ScalarType::Double) {
        return std::string("the probabilities pass through ") + ir::dtype_short_name(t->dtype);
      }
    }
    if (tensor_type(a.out->input(0))->dtype != dt) return "the probabilities are not in the inputs' dtype";
    if (a.additive_mask) {
      const ir::Type* m = tensor_type(a.additive_mask);
      if (!m) return "the mask is not a tensor";
      if (m->dtype != dt) return std::string("the additive mask is ") + ir::dtype_short_name(m->dtype) + ", not " + ir::dtype_short_name(dt);
      if (m->rank() > r) return "the mask has more dims than the scores";
      if (m->device != q->device) return "the mask is on another device";
    }
    for (Value* b : {a.excluded, a.kept}) {
      if (!b) continue;
      const ir::Type* m = tensor_type(b);
      if (!m || m->dtype != c10::ScalarType::Bool) return "the mask of masked_fill/where is not boolean";
      if (m->rank() > r) return "the mask has more dims than the scores";
      if (m->device != q->device) return "the mask is on another device";
    }
    return "";
  }

  std::string check_single_uses(const Attention& a) {
    for (Value* x : a.intermediates) {
      if (x->uses().size() != 1) return name(x) + " (attention scores or weights) is read elsewhere too";
      if (x->node()->owningBlock() != a.out->owningBlock()) return "the pattern spans blocks";
    }
    return "";
  }

  const RewriteContext& ctx_;
};

// Grouped heads in float32 or float64: no fused attention kernel reads them (ATen's
// _fused_sdp_choice picks its math for them, and the call would repeat the heads on every call,
// two copies per layer). Repeated in the graph instead, as Hugging Face's repeat_kv spells it, the
// key's repeat joins the kernel that rotates it (its group writes the repeated heads; the
// reshape after is a view) and the call reads the heads as they are.
bool repeats_in_graph(const Attention& a) {
  return a.groups > 1 && (a.dtype == c10::ScalarType::Float || a.dtype == c10::ScalarType::Double);
}

std::string describe(const Attention& a) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os.precision(17);
  if (a.from_sdpa) {
    os << "attention " << name(a.out->output()) << " = scaled_dot_product_attention(" << name(a.query) << ", "
       << name(a.key) << ", " << name(a.value) << ", scale " << a.scale;
    if (a.additive_mask) os << ", mask " << name(a.additive_mask) << " as given";
    if (a.kept) os << ", boolean mask " << name(a.kept) << " made additive once (as ATen would per call)";
    if (a.causal) os << ", causal";
    os << ")";
  } else {
    os << "attention " << name(a.out->output()) << " = softmax(" << name(a.query) << " @ " << name(a.key_t) << " * "
       << a.scale;
    if (a.additive_mask) os << " + " << name(a.additive_mask);
    if (a.excluded) os << " without " << name(a.excluded);
    if (a.kept) os << " where " << name(a.kept);
    os << ") @ " << name(a.value);
  }
  if (a.groups > 1) {
    os << ", key and value repeated from " << name(a.key_heads) << " and " << name(a.value_heads) << " (" << a.groups
       << " query heads per head: grouped heads";
    if (repeats_in_graph(a)) os << "; repeated in the graph, where the key's repeat fuses with what computes it";
    os << ")";
  }
  if (a.query_tokens_major) os << ", query written tokens-major for the output's transpose";
  os << " -> torchfuse::attention";
  return os.str();
}

// Puts the call in place of the pattern. A mask shared by several calls (every layer of a model
// reads one) is prepared once (torchfuse::attention_mask: additive, fully masked rows NaN), at the
// first call reading it; a boolean mask of scaled_dot_product_attention calls is converted once
// (ATen's own conversion, which it would repeat per call: 0 where a position takes part, -inf
// elsewhere, in the query's dtype), as graph ops that fuse with the mask's own computation.
class Replacer {
 public:
  Replacer(torch::jit::Graph& graph, const RewriteContext& ctx) : graph_(graph), ctx_(ctx) {}

  // Returns the call's output.
  Value* replace(const Attention& a) {
    torch::jit::WithInsertPoint guard(a.out);
    Value* query = a.query;
    if (a.query_tokens_major) {
      Value* tokens_major = graph_.insert(c10::aten::contiguous, {graph_.insert(c10::aten::transpose, {query, 1, 2})});
      query = graph_.insert(c10::aten::transpose, {tokens_major, 1, 2});
    }
    Value* key = a.key_heads ? a.key_heads : a.key ? a.key : graph_.insert(c10::aten::transpose, {a.key_t, -2, -1});
    Value* value = a.value_heads ? a.value_heads : a.value;
    const bool repeat = repeats_in_graph(a);
    if (repeat) {
      key = repeat_heads(key, a.groups);
      value = repeat_heads(value, a.groups);
    }
    Value* mask = a.additive_mask ? a.additive_mask : a.kept ? a.kept : a.excluded;
    if (mask && !a.from_sdpa) {
      mask = mask_call(attention_mask_op(), mask, a.excluded != nullptr, a.dtype, a.out->owningBlock());
    } else if (mask && a.kept) {
      // A boolean mask of a scaled_dot_product_attention call: converted as ATen would on each call.
      mask = mask_call(c10::aten::masked_fill, mask, false, a.dtype, a.out->owningBlock());
    } else if (!mask) {
      mask = graph_.insertConstant(c10::IValue());
    }
    Value* out = insert_call(attention_op(), {query, key, value, mask, graph_.insertConstant(a.scale),
                                              graph_.insertConstant(a.causal), graph_.insertConstant(true),
                                              graph_.insertConstant(a.groups > 1 && !repeat), graph_.insertConstant(int64_t{0}),
                                              graph_.insertConstant(ctx_.attention_timed)},
                              "");
    out->setType(a.out->output()->type());
    a.out->output()->replaceAllUsesWith(out);
    return out;
  }

 private:
  // x [..., heads, S, D] with each head repeated `groups` times in place (dim -3):
  // x.unsqueeze(-3).expand(..., groups, S, D).flatten(-4, -3), what enable_gqa reads x as.
  Value* repeat_heads(Value* x, int64_t groups) {
    const ir::Type* t = ctx_.type_of(x);
    TORCHFUSE_INTERNAL_ASSERT(t && t->is_tensor() && t->rank() >= 3, "grouped heads of an unprofiled or low-rank key");
    const int64_t r = t->rank();
    std::vector<int64_t> sizes(static_cast<size_t>(r + 1), -1);
    sizes[static_cast<size_t>(r - 2)] = groups;
    Value* unsqueezed = graph_.insert(c10::aten::unsqueeze, {x, r - 2});
    Value* expanded = graph_.insert(c10::aten::expand, {unsqueezed, graph_.insertConstant(sizes)});
    return graph_.insert(c10::aten::flatten, {expanded, r - 3, r - 2});
  }

  // A mask made once per mask, op, dtype and block: torchfuse::attention_mask (with `exclude`),
  // or the additive form of a boolean sdpa mask (op aten::masked_fill, the op that makes it).
  struct Prepared {
    c10::Symbol op;
    const Value* mask;
    bool exclude;
    c10::ScalarType dtype;
    Value* made;
  };

  Value* mask_call(const c10::Symbol& op, Value* mask, bool exclude, c10::ScalarType dtype, torch::jit::Block* block) {
    for (const Prepared& p : prepared_) {
      if (p.op == op && p.mask == mask && p.exclude == exclude && p.dtype == dtype && p.made->node()->owningBlock() == block)
        return p.made;
    }
    Value* made = nullptr;
    if (op == attention_mask_op()) {
      made = insert_call(op, {mask, graph_.insertConstant(static_cast<int64_t>(dtype)), graph_.insertConstant(exclude)},
                         "attn_mask");
    } else {
      made = additive_sdpa_mask(mask, dtype);
    }
    prepared_.push_back({op, mask, exclude, dtype, made});
    return made;
  }

  // full_like(mask, -inf, dtype).masked_fill(mask, 0.): what ATen's scaled_dot_product_attention
  // makes of a boolean mask, by the same two ATen ops where the group does not form.
  Value* additive_sdpa_mask(Value* mask, c10::ScalarType dtype) {
    Value* none = graph_.insertConstant(c10::IValue());
    Node* filled = graph_.insertNode(graph_.create(
        c10::aten::full_like,
        {mask, graph_.insertConstant(-std::numeric_limits<double>::infinity()),
         graph_.insertConstant(static_cast<int64_t>(dtype)), none, none, none, none},
        1));
    filled->output()->setType(c10::TensorType::get());
    Node* kept = graph_.insertNode(
        graph_.create(c10::aten::masked_fill, {filled->output(), mask, graph_.insertConstant(0.0)}, 1));
    kept->output()->setType(c10::TensorType::get());
    kept->output()->setDebugName("attn_mask");
    return kept->output();
  }

  Value* insert_call(const c10::Symbol& op, const std::vector<Value*>& inputs, const std::string& hint) {
    Node* call = graph_.insertNode(graph_.create(op, inputs, 1));
    call->output()->setType(c10::TensorType::get());
    if (!hint.empty()) call->output()->setDebugName(hint);
    return call->output();
  }

  static const c10::Symbol& attention_mask_op() {
    static const c10::Symbol s = c10::Symbol::fromQualString("torchfuse::attention_mask");
    return s;
  }

  torch::jit::Graph& graph_;
  const RewriteContext& ctx_;
  std::vector<Prepared> prepared_;
};

void collect_candidates(torch::jit::Block* block, std::vector<Node*>& out) {
  for (Node* n : block->nodes()) {
    if (is_kind(n, "aten::matmul") || is_kind(n, "aten::bmm") || is_kind(n, "aten::scaled_dot_product_attention"))
      out.push_back(n);
    for (torch::jit::Block* b : n->blocks()) collect_candidates(b, out);
  }
}

}  // namespace

void rewrite_attention(RewriteContext& ctx) {
  std::vector<Node*> candidates;
  collect_candidates(ctx.graph.block(), candidates);
  Matcher matcher(ctx);
  Replacer replacer(ctx.graph, ctx);
  for (Node* out : candidates) {
    const MatchResult r = matcher.match(out);
    if (!r.is_attention) continue;
    if (!r.refusal.empty()) {
      ctx.refused("attention at " + name(out->output()) + " stays as it is: " + r.refusal);
      continue;
    }
    ctx.applied(describe(r.found));
    ctx.inherit_type(replacer.replace(r.found), out->output());
  }
}

}  // namespace torchfuse
