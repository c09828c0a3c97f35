#include "tests/fuzz/program.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <torch/torch.h>

namespace tffuzz {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Sliced: return "sliced";
    case Layout::Transposed: return "transposed";
    case Layout::Expanded: return "expanded";
    case Layout::ChannelsLast: return "channels_last";
    case Layout::Offset: return "offset";
  }
  return "?";
}

namespace {

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return std::to_string(dims[0]);
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

struct Value {
  std::string name;
  std::vector<int64_t> sizes;
  // Computed through a sum of many terms (a reduction, a norm, a scan, attention's matmuls), whose
  // rounding depends on the order the terms are added in: eager's and the compiled order differ
  // by design. Ops with a jump do not read such values (jump_free).
  bool summed = false;
};

class Generator {
 public:
  Generator(uint64_t seed, uint64_t index, const Options& o) : rng_(seed * 0x9E3779B97F4A7C15ull + index * 1000003ull + 1), o_(o) {}

  Program run() {
    Program p;
    program_ = &p;
    const std::vector<c10::ScalarType> dtypes =
        o_.allow_half ? std::vector<c10::ScalarType>{c10::kFloat, c10::kHalf, c10::kBFloat16}
                      : std::vector<c10::ScalarType>{c10::kFloat, c10::kBFloat16};
    p.dtype = one_of(dtypes);
    p.values = chance(0.15) ? Values::Special : Values::Normal;
    special_ = p.values == Values::Special;
    const auto base = base_shape();
    const int n_inputs = 1 + pick(3);
    for (int i = 0; i < n_inputs; ++i) {
      Input in;
      in.sizes = i == 0 ? base : variant(base);
      in.layout = layout_for(in.sizes);
      p.inputs.push_back(in);
      live_.push_back({"x" + std::to_string(i), in.sizes, false});
    }
    const int n_statements = 2 + pick(6);
    for (int k = 0; k < n_statements; ++k) {
      Statement s = statement();
      s.name = "t" + std::to_string(k);
      // Names the unpacked pieces after the statement: t3_0, t3_1.
      for (auto& line : s.pre) line = replace(line, "@", s.name + "_");
      s.expr = replace(s.expr, "@", s.name + "_");
      live_.push_back({s.name, s.sizes, summed(s)});
      p.statements.push_back(std::move(s));
    }
    p.outputs.push_back(p.statements.back().name);
    if (p.statements.size() > 1 && chance(0.3)) {
      const std::string extra = p.statements[pick(static_cast<int>(p.statements.size()) - 1)].name;
      p.outputs.push_back(extra);
    }
    return p;
  }

 private:
  int pick(int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng_)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& one_of(const std::vector<T>& v) { return v[pick(static_cast<int>(v.size()))]; }

  std::vector<int64_t> base_shape() {
    static const std::vector<int64_t> pool = {1, 1, 2, 3, 5, 7, 17, 31, 64, 100, 128, 255, 256, 512, 1000, 1024, 4097};
    const std::vector<int> ranks = {1, 2, 2, 2, 3, 3, 3, 4, 4};
    std::vector<int64_t> s(one_of(ranks));
    for (auto& d : s) d = chance(0.01) ? 0 : one_of(pool);
    // Rows longer than a block, now and then: up to 65537 elements in the last dim.
    if (chance(0.05)) s.back() = chance(0.5) ? 16384 : 65537;
    // Long leading dims over few columns, now and then: column passes that split each tile's
    // rows over blocks (choose_column_pass_split).
    if (s.size() >= 2 && chance(0.05)) s.front() = chance(0.5) ? 4099 : 20000;
    // (A size-0 dim counts as 1: the other dims still set the storage a layout allocates, and a
    // sliced input's last dim grows by 5. [4099, 1000, 128, 0] sliced was 10 GB: seed 86, 324.)
    auto storage = [](const std::vector<int64_t>& v) {
      int64_t n = 1;
      for (int64_t d : v) n *= std::max<int64_t>(d, 1);
      return n;
    };
    while (storage(s) > o_.max_elements) {
      auto it = std::max_element(s.begin(), s.end());
      *it = std::max<int64_t>(1, *it / 7);
    }
    return s;
  }

  // Another input's shape: the base, the base with some dims 1, a suffix of it, or all ones.
  std::vector<int64_t> variant(const std::vector<int64_t>& base) {
    const int kind = pick(5);
    std::vector<int64_t> s = base;
    if (kind == 1 || kind == 2) {
      for (auto& d : s)
        if (chance(0.4)) d = 1;
    } else if (kind == 3 && s.size() > 1) {
      s.erase(s.begin(), s.begin() + 1 + pick(static_cast<int>(s.size()) - 1));
    } else if (kind == 4) {
      std::fill(s.begin(), s.end(), 1);
    }
    return s;
  }

  Layout layout_for(const std::vector<int64_t>& s) {
    const int r = pick(100);
    if (r < 50 || s.empty()) return Layout::Contiguous;
    if (r < 65) return Layout::Sliced;
    if (r < 80 && s.size() >= 2) return Layout::Transposed;
    if (r < 87 && std::any_of(s.begin(), s.end(), [](int64_t d) { return d > 1; })) return Layout::Expanded;
    if (r < 93 && s.size() == 4) return Layout::ChannelsLast;
    return Layout::Offset;
  }

  // A live value, the later ones more often.
  const Value& operand() {
    const int n = static_cast<int>(live_.size());
    const int i = chance(0.6) ? std::max(0, n - 1 - pick(std::min(n, 3))) : pick(n);
    return live_[i];
  }

  // Whether a statement's value carries a sum's rounding: it sums, or it reads a value that does.
  bool summed(const Statement& s) const {
    static const std::set<std::string> sums = {"sum", "mean", "var", "std", "logsumexp", "sum_all", "mean_all",
                                               "softmax", "layer_norm", "rms_norm", "group_norm", "batch_norm",
                                               "attention", "cumsum", "gemm"};
    for (const auto& op : s.ops)
      if (sums.count(op)) return true;
    for (const auto& name : s.reads)
      for (const auto& v : live_)
        if (v.name == name && v.summed) return true;
    return false;
  }

  // A pattern with a jump (remainder, fmod, floor, round) over summed values is replaced after the
  // draw by one without (unary: the table's first; binary: A * B), so that the programs after it
  // stay the same. Each element of such a value is eager's to within the sum's rounding, and the
  // jump turns that into a whole step where the two land on either side of it: over a [16384]
  // row, remainder(x.sum(0), |x| + 0.5)'s error over eight draws was about one element a whole
  // step off, eager's none (GPU seed 47), with the sum as right as eager's.
  static bool jump_free(const char* text, bool reads_summed) {
    if (!reads_summed) return true;
    const std::string t = text;
    for (const char* jump : {"remainder", "fmod", "floor", "round"})
      if (t.find(jump) != std::string::npos) return false;
    return true;
  }

  Statement statement() {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const int kind = pick(104);
      std::optional<Statement> s = kind < 28 ? unary()
                                   : kind < 52 ? binary()
                                   : kind < 60 ? view()
                                   : kind < 70 ? part_view()
                                   : kind < 92 ? reduction()
                                   : kind < 97 ? index_op()
                                   : kind < 100 ? attention()
                                                : gemm();
      if (s && numel(s->sizes) <= o_.max_elements) return *s;
    }
    return *unary();
  }

  // An expression with placeholders A (and B) for its operands, and the ops it uses.
  struct Pattern {
    const char* text;
    std::vector<std::string> ops;
  };

  std::optional<Statement> unary() {
    static const std::vector<Pattern> table = {
        {"torch.relu(A)", {"relu"}},
        {"torch.sigmoid(A)", {"sigmoid"}},
        {"torch.tanh(A)", {"tanh"}},
        {"torch.exp(torch.clamp(A, -10.0, 10.0))", {"clamp", "exp"}},
        {"torch.abs(A)", {"abs"}},
        {"-A", {"neg"}},
        {"torch.erf(A)", {"erf"}},
        {"torch.silu(A)", {"silu"}},
        {"torch.gelu(A)", {"gelu"}},
        {"torch.gelu(A, approximate='tanh')", {"gelu_tanh"}},
        {"torch.log(torch.abs(A) + 1.0)", {"abs", "add", "log"}},
        {"torch.sqrt(torch.abs(A))", {"abs", "sqrt"}},
        {"A * 0.37 + 1.25", {"mul", "add"}},
        {"torch.rsqrt(torch.abs(A) + 0.5)", {"abs", "add", "rsqrt"}},
        {"torch.clamp(A, -1.5, 2.0)", {"clamp"}},
        {"A.pow(2)", {"pow"}},
        {"torch.reciprocal(torch.abs(A) + 1.0)", {"abs", "add", "reciprocal"}},
        {"A.float()", {"cast"}},
        {"A.to(15)", {"cast"}},  // torch.bfloat16: a ScalarType number (the C++ define has no resolver for the name)
        {"A.half()", {"cast"}},
        {"torch.sin(A)", {"sin"}},
        {"torch.cos(A) * A", {"cos", "mul"}},
        {"torch.log1p(torch.abs(A))", {"abs", "log1p"}},
        {"torch.expm1(torch.clamp(A, -10.0, 10.0))", {"clamp", "expm1"}},
        {"torch.floor(A * 2.0)", {"mul", "floor"}},
        {"torch.round(A)", {"round"}},
        {"torch.sign(A) * A", {"sign", "mul"}},
        {"torch.leaky_relu(A, 0.1)", {"leaky_relu"}},
        {"torch.elu(A)", {"elu"}},
        {"torch.softplus(A)", {"softplus"}},
        {"torch.hardswish(A)", {"hardswish"}},
        {"torch.hardsigmoid(A)", {"hardsigmoid"}},
        {"torch.hardtanh(A, -0.5, 1.5)", {"hardtanh"}},
        {"torch.mish(A)", {"mish"}},
        {"torch.full_like(A, 0.5) * A", {"full_like", "mul"}},
        // A tensor from A's size alone (a shape tensor: computed once per size, cache_shape_tensors).
        {"A * (torch.arange(A.size(-1), device=A.device).float() * 0.01 + 1.0).to(A.dtype)",
         {"arange", "cast", "mul", "add"}},
    };
    const Value& a = operand();
    const Pattern& picked = one_of(table);
    // (A 0-dim operand has no size(-1).)
    const bool sized = a.sizes.empty() && std::string(picked.text).find("size(") != std::string::npos;
    const Pattern& u = sized || !jump_free(picked.text, a.summed) ? table[0] : picked;
    Statement s;
    s.expr = replace(u.text, "A", a.name);
    s.sizes = a.sizes;
    s.reads = {a.name};
    s.ops = u.ops;
    return s;
  }

  std::optional<Statement> binary() {
    static const std::vector<Pattern> table = {
        {"A + B", {"add"}},
        {"A - B", {"sub"}},
        {"A * B", {"mul"}},
        {"A / (torch.abs(B) + 1.0)", {"abs", "add", "div"}},
        {"torch.maximum(A, B)", {"maximum"}},
        {"torch.minimum(A, B)", {"minimum"}},
        {"torch.where(A > 0.1, A, B)", {"gt", "where"}},
        {"torch.remainder(A, torch.abs(B) + 0.5)", {"abs", "add", "remainder"}},
        {"torch.fmod(A * B, 0.75)", {"mul", "fmod"}},
        {"(A * B).masked_fill(B > 0.5, 0.0)", {"mul", "gt", "masked_fill"}},
        {"torch.where(B > 0.0, A, 0.0)", {"gt", "where"}},
        {"torch.max(A, B)", {"max_binary"}},
        // Conditions joined as Hugging Face's mask construction joins them (& and | of bools).
        {"torch.where((A > 0.1) & (B < 0.2), A, B)", {"gt", "lt", "logical_and", "where"}},
        {"torch.where((A > 0.1) | (B < -0.2), B, A)", {"gt", "lt", "logical_or", "where"}},
        // An additive mask as sdpa's boolean one becomes (a finite fill: later ops stay finite).
        {"torch.full_like(A, -2.5).masked_fill(A > B, 0.0) + B", {"full_like", "gt", "masked_fill", "add"}},
    };
    const Value& a = operand();
    std::vector<const Value*> partners;
    for (const auto& v : live_)
      if (broadcast(a.sizes, v.sizes)) partners.push_back(&v);
    const Value& b = *one_of(partners);
    const Pattern& drawn = one_of(table);
    const Pattern& op = jump_free(drawn.text, a.summed || b.summed) ? drawn : table[2];  // A * B
    Statement s;
    s.expr = replace(replace(op.text, "A", a.name), "B", b.name);
    s.sizes = *broadcast(a.sizes, b.sizes);
    s.reads = {a.name, b.name};
    s.ops = op.ops;
    return s;
  }

  // A view of a live value, with a pointwise op after it so that it can join a group:
  // permute, transpose, t, unsqueeze, squeeze, flatten, reshape(-1), unflatten.
  std::optional<Statement> view() {
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    Statement s;
    s.reads = {a.name};
    std::string v;
    const int kind = pick(8);
    if (kind == 0 && r >= 2) {
      std::vector<int64_t> perm(r);
      for (int64_t i = 0; i < r; ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), rng_);
      for (int64_t d : perm) s.sizes.push_back(a.sizes[d]);
      std::string dims;
      for (int64_t d : perm) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      v = a.name + ".permute(" + dims + ")";
      s.ops = {"permute"};
    } else if (kind == 1 && r >= 2) {
      const int64_t d0 = pick(static_cast<int>(r)), d1 = pick(static_cast<int>(r));
      s.sizes = a.sizes;
      std::swap(s.sizes[d0], s.sizes[d1]);
      v = a.name + ".transpose(" + std::to_string(d0 - (chance(0.5) ? r : 0)) + ", " + std::to_string(d1) + ")";
      s.ops = {"transpose"};
    } else if (kind == 2 && r == 2) {
      s.sizes = {a.sizes[1], a.sizes[0]};
      v = a.name + ".t()";
      s.ops = {"t"};
    } else if (kind == 3) {
      const int64_t d = pick(static_cast<int>(r) + 1);
      s.sizes = a.sizes;
      s.sizes.insert(s.sizes.begin() + d, 1);
      v = a.name + ".unsqueeze(" + std::to_string(d) + ")";
      s.ops = {"unsqueeze"};
    } else if (kind == 4 && std::count(a.sizes.begin(), a.sizes.end(), 1) > 0) {
      for (int64_t d : a.sizes)
        if (d != 1) s.sizes.push_back(d);
      v = a.name + ".squeeze()";
      s.ops = {"squeeze"};
    } else if (kind == 5 && r >= 2) {
      const int64_t lo = pick(static_cast<int>(r) - 1);
      const int64_t hi = lo + 1 + pick(static_cast<int>(r - lo - 1));
      int64_t merged = 1;
      for (int64_t d = 0; d < r; ++d) {
        if (d < lo || d > hi) s.sizes.push_back(a.sizes[d]);
        else merged *= a.sizes[d];
        if (d == hi) s.sizes.push_back(merged);
      }
      v = a.name + ".flatten(" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
      s.ops = {"flatten"};
    } else if (kind == 6 && r >= 2) {
      s.sizes = {numel(a.sizes)};
      v = a.name + ".reshape(-1)";
      s.ops = {"reshape"};
    } else if (kind == 7 && r >= 1) {
      // A dim split in two, its first factor the smallest one above 1 (a dim with none is split
      // as [1, -1]), the other written -1 half the time; the dim negative half the time.
      const int64_t d = pick(static_cast<int>(r));
      const int64_t n = a.sizes[d];
      int64_t f = 2;
      while (f < n && n % f != 0) ++f;
      if (f >= n || n % f != 0) f = 1;
      s.sizes = a.sizes;
      s.sizes[d] = n / f;
      s.sizes.insert(s.sizes.begin() + d, f);
      const std::string rest = n > 0 && chance(0.5) ? "-1" : std::to_string(n / f);
      v = a.name + ".unflatten(" + std::to_string(d - (chance(0.5) ? r : 0)) + ", [" + std::to_string(f) + ", " + rest + "])";
      s.ops = {"unflatten"};
    } else {
      return std::nullopt;
    }
    s.expr = "torch.relu(" + v + ") * 1.5";
    s.ops.push_back("relu");
    s.ops.push_back("mul");
    return s;
  }

  // A view that takes part of a live value or broadcasts it (slice, select, narrow, chunk,
  // split and unbind pieces, indexed or unpacked; expand, expand_as, contiguous; rotate_half's
  // cat of halves, a cat with a narrowed piece, a stack; reshapes), with pointwise ops after it so
  // that it can join a group. Constant arguments, negative and past-the-end ones too, and sizes
  // the graph computes (size arithmetic).
  std::optional<Statement> part_view() {
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    if (r == 0) return std::nullopt;
    Statement s;
    s.reads = {a.name};
    const int64_t d = pick(static_cast<int>(r));
    const int64_t n = a.sizes[d];
    // The dim as written: negative half the time.
    const std::string dim = std::to_string(chance(0.5) ? d - r : d);
    std::string v;
    s.sizes = a.sizes;
    switch (pick(10)) {
      case 0: {  // slice: start, end (maybe negative or past the end), step
        const int64_t lo = pick(static_cast<int>(n) + 2) - (chance(0.3) ? n : 0);
        const int64_t hi = chance(0.2) ? n + 3 : pick(static_cast<int>(n) + 2) - (chance(0.3) ? n : 0);
        const int64_t step = chance(0.7) ? 1 : 2 + pick(2);
        const auto clamp = [&](int64_t i) { return std::min(std::max<int64_t>(i < 0 ? i + n : i, 0), n); };
        const int64_t b = clamp(lo), e = std::max(clamp(hi), b);
        s.sizes[d] = (e - b + step - 1) / step;
        std::string idx;
        for (int64_t i = 0; i < d; ++i) idx += ":, ";
        // Bounds the graph computes from the size (size arithmetic) a third of the time.
        const bool computed = chance(0.35);
        const auto bound = [&](int64_t i) {
          if (!computed || i < 0 || i > n) return std::to_string(i);
          return a.name + ".size(" + dim + ") - " + std::to_string(n - i);
        };
        idx += bound(lo) + ":" + bound(hi) + (step > 1 ? ":" + std::to_string(step) : "");
        v = a.name + "[" + idx + "]";
        s.ops = {"slice"};
        break;
      }
      case 1: {  // select
        if (n == 0) return std::nullopt;
        const int64_t i = pick(static_cast<int>(n)) - (chance(0.5) ? n : 0);
        s.sizes.erase(s.sizes.begin() + d);
        v = a.name + ".select(" + dim + ", " + std::to_string(i) + ")";
        s.ops = {"select"};
        break;
      }
      case 2: {  // narrow
        const int64_t len = pick(static_cast<int>(n) + 1);
        const int64_t start = pick(static_cast<int>(n - len) + 1);
        s.sizes[d] = len;
        const std::string length = chance(0.35) ? a.name + ".size(" + dim + ") - " + std::to_string(n - len) : std::to_string(len);
        v = a.name + ".narrow(" + dim + ", " + std::to_string(chance(0.3) && start > 0 ? start - n : start) + ", " + length + ")";
        s.ops = {"narrow"};
        break;
      }
      case 3: {  // chunk(k)[i]
        if (n == 0) return std::nullopt;
        const int64_t k = 1 + pick(3);
        const int64_t size = (n + k - 1) / k;
        const int64_t pieces = (n + size - 1) / size;
        const int64_t i = pick(static_cast<int>(pieces));
        s.sizes[d] = i < pieces - 1 ? size : n - size * (pieces - 1);
        v = a.name + ".chunk(" + std::to_string(k) + ", " + dim + ")[" + std::to_string(chance(0.3) ? i - pieces : i) + "]";
        s.ops = {"chunk"};
        break;
      }
      case 4: {  // split(size)[i] and split(sizes)[i]
        if (n == 0) return std::nullopt;
        if (chance(0.5) && n >= 2) {
          const int64_t first = 1 + pick(static_cast<int>(n) - 1);
          const int64_t i = pick(2);
          s.sizes[d] = i == 0 ? first : n - first;
          v = a.name + ".split([" + std::to_string(first) + ", " + std::to_string(n - first) + "], " + dim + ")[" +
              std::to_string(i) + "]";
        } else {
          const int64_t size = 1 + pick(static_cast<int>(std::min<int64_t>(n, 40)));
          const int64_t pieces = (n + size - 1) / size;
          const int64_t i = pick(static_cast<int>(pieces));
          s.sizes[d] = i < pieces - 1 ? size : n - size * (pieces - 1);
          v = a.name + ".split(" + std::to_string(size) + ", " + dim + ")[" + std::to_string(i) + "]";
        }
        s.ops = {"split"};
        break;
      }
      case 5: {  // unbind(d)[i]
        if (n == 0 || n > 64) return std::nullopt;
        const int64_t i = pick(static_cast<int>(n));
        s.sizes.erase(s.sizes.begin() + d);
        v = a.name + ".unbind(" + dim + ")[" + std::to_string(i) + "]";
        s.ops = {"unbind"};
        break;
      }
      case 6: {  // unpacked into equal pieces: chunk(k) of a multiple of k, or unbind of a few
        const bool unbind = n >= 2 && n <= 3 && chance(0.5);
        const int64_t k = unbind ? n : 2 + pick(2);
        if (n == 0 || (!unbind && n % k != 0)) return std::nullopt;
        std::string names, expr;
        for (int64_t i = 0; i < k; ++i) {
          const std::string piece = "@" + std::to_string(i);  // named after the statement in run()
          names += (i ? ", " : "") + piece;
          expr += i == 0 ? "torch.relu(" + piece + ")" : (i == 1 ? " * " : " + ") + piece;
        }
        if (unbind) s.sizes.erase(s.sizes.begin() + d);
        else s.sizes[d] = n / k;
        s.pre = {names + " = " + a.name + (unbind ? ".unbind(" + dim + ")" : ".chunk(" + std::to_string(k) + ", " + dim + ")")};
        s.expr = expr;
        s.ops = {unbind ? "unbind_unpack" : "chunk_unpack", "relu", "mul"};
        return s;
      }
      case 7: {  // expand: size-1 dims grow, maybe a new leading dim
        std::vector<int64_t> target;
        std::string t;
        if (chance(0.4)) target.push_back(2);
        for (int64_t i = 0; i < r; ++i) target.push_back(a.sizes[i] == 1 && chance(0.7) ? one_of(std::vector<int64_t>{3, 5, 17, 64}) : -1);
        const size_t lead = target.size() - a.sizes.size();
        for (size_t i = 0; i < target.size(); ++i) {
          // A kept dim written as the size the graph reads (size arithmetic) some of the time.
          const bool computed = target[i] == -1 && chance(0.4);
          t += (i ? ", " : "") + (computed ? a.name + ".size(" + std::to_string(i - lead) + ")" : std::to_string(target[i]));
        }
        s.sizes.clear();
        for (size_t i = 0; i < target.size(); ++i) s.sizes.push_back(target[i] == -1 ? a.sizes[i - lead] : target[i]);
        v = a.name + ".expand(" + t + ")";
        s.ops = {"expand"};
        break;
      }
      case 8: {  // expand_as a live value it broadcasts to, or contiguous after a transpose
        std::vector<const Value*> bigger;
        for (const auto& o : live_) {
          auto b = broadcast(a.sizes, o.sizes);
          if (b && *b == o.sizes) bigger.push_back(&o);
        }
        if (chance(0.5) && !bigger.empty()) {
          const Value& o = *one_of(bigger);
          s.sizes = o.sizes;
          s.reads.push_back(o.name);
          v = a.name + ".expand_as(" + o.name + ")";
          s.ops = {"expand_as"};
        } else if (r >= 2) {
          std::swap(s.sizes[r - 1], s.sizes[r - 2]);
          v = a.name + ".transpose(-1, -2).contiguous()";
          s.ops = {"transpose", "contiguous"};
        } else {
          v = a.name + ".contiguous()";
          s.ops = {"contiguous"};
        }
        break;
      }
      default: {
        if (chance(0.25) && n > 0) {  // cat with a computed, shorter piece of itself along dim d
          const int64_t len = 1 + pick(static_cast<int>(n));
          s.sizes[d] = n + len;
          s.expr = "torch.cat((" + a.name + " * 1.5, torch.sigmoid(" + a.name + ".narrow(" + dim + ", 0, " +
                   std::to_string(len) + "))), " + dim + ")";
          s.ops = {"cat", "narrow", "sigmoid", "mul"};
          return s;
        }
        if (chance(0.25)) {  // stack of two values computed from it, along a new dim
          const int64_t at = pick(static_cast<int>(r) + 1);
          s.sizes.insert(s.sizes.begin() + at, 2);
          s.expr = "torch.stack((torch.relu(" + a.name + "), " + a.name + " * -0.5), " + std::to_string(at) + ")";
          s.ops = {"stack", "relu", "mul"};
          return s;
        }
        if (chance(0.3) && r >= 2) {  // reshape to sizes the graph computes: the last dim split, or all merged into two
          const int64_t last = a.sizes.back();
          std::string lead;
          for (int64_t i = 0; i + 1 < r; ++i) lead += a.name + ".size(" + std::to_string(i) + "), ";
          if (last % 2 == 0 && last > 0 && chance(0.6)) {
            s.sizes.back() = 2;
            s.sizes.push_back(last / 2);
            v = a.name + ".reshape(" + lead + "2, -1)";
          } else {
            int64_t rest = 1;
            for (int64_t i = 1; i < r; ++i) rest *= a.sizes[i];
            s.sizes = {a.sizes[0], rest};
            v = a.name + ".reshape(" + a.name + ".size(0), -1)";
          }
          s.ops = {"reshape"};
          break;
        }
        // rotate_half: the halves of the last dim swapped, one negated, through cat
        const int64_t last = a.sizes.back();
        if (last % 2 != 0 || last == 0) return std::nullopt;
        // The half as a constant, or as Llama's rotate_half computes it (x.shape[-1] // 2).
        const std::string h = chance(0.5) ? std::to_string(last / 2) : a.name + ".size(-1) // 2";
        s.expr = a.name + " * 0.5 + torch.cat((-" + a.name + "[..., " + h + ":], " + a.name + "[..., :" + h + "]), -1)";
        s.ops = {"slice", "neg", "cat", "mul", "add"};
        return s;
      }
    }
    s.expr = "torch.relu(" + v + ") * 1.5";
    s.ops.push_back("relu");
    s.ops.push_back("mul");
    return s;
  }

  // Attention spelled out over a value's last two dims (tokens, head dim), as
  // passes/rewrite_attention.cpp takes it: its scores against a key computed from it, scaled (a
  // product, a division, or the query scaled), masked now and then (causal, from the sizes; or the
  // keys whose row's midrange, (min + max) / 2, is 0 or less, which leaves some rows with no key:
  // NaN, as eager gives; not the row's sum, which is rounding noise around 0 when the row is a
  // layer norm's output, so that eager and compiled masked different keys: seed 83, program 593),
  // softmax over the keys (in the dtype or in float and back), times a value computed from it.
  std::optional<Statement> attention() {
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    // Rank 2 now and then: the rewrite takes rank 3 and more, and leaves matrices with the reason.
    if (r < 2 || (r == 2 && chance(0.8))) return std::nullopt;
    const int64_t t = a.sizes[r - 2], d = a.sizes[r - 1];
    if (t == 0 || d == 0 || numel(a.sizes) / d * t > o_.max_elements) return std::nullopt;  // the scores
    Statement s;
    s.sizes = a.sizes;
    s.reads = {a.name};
    s.ops = {"attention", "matmul", "softmax", "tanh", "sigmoid"};
    const std::string key_t = "torch.tanh(" + a.name + ").transpose(-2, -1)";
    const int scale = pick(3);
    std::string scores = scale == 2 ? "torch.matmul(" + a.name + " * 0.25, " + key_t + ")"
                                    : "torch.matmul(" + a.name + ", " + key_t + ")" + (scale == 0 ? " * 0.125" : " / 8.0");
    // Masked attention over special values is drawn unmasked (the draw kept, so that the programs
    // after it stay the same): where the value holds NaN or inf at a masked-out position, eager's
    // second matmul spreads it (0 x NaN) over rows the mask leaves it out of, and ATen's fused
    // kernels, which skip what the mask excludes, do not (seed 37, program 1361;
    // docs/architecture.md).
    int mask = pick(3);
    if (special_) mask = 0;
    if (mask == 1) {
      // (dtypes by number, as A.to(15) above: 11 is torch.bool, 6 torch.float32.)
      s.pre = {"@causal = torch.ones(" + a.name + ".size(-2), " + a.name + ".size(-2), dtype=11, device=" +
               a.name + ".device).triu(1)"};
      scores = "(" + scores + ").masked_fill(@causal, float('-inf'))";
      s.ops.insert(s.ops.end(), {"masked_fill", "triu"});
    } else if (mask == 2) {
      scores = "(" + scores + ").masked_fill((" + a.name + ".amin(-1) + " + a.name +
               ".amax(-1)).unsqueeze(-2) <= 0.0, float('-inf'))";
      s.ops.insert(s.ops.end(), {"masked_fill", "amin", "amax"});
    }
    const std::string probs = chance(0.5) ? "torch.softmax(" + scores + ", -1)"
                                          : "torch.softmax(" + scores + ", -1, dtype=6).to(" + a.name + ".dtype)";
    s.expr = "torch.matmul(" + probs + ", torch.sigmoid(" + a.name + "))";
    return s;
  }

  // A GEMM over a value's last dim and what follows one in models (passes/rewrite_gemm_epilogues,
  // rewrite_plain_gemms, rewrite_linear_bias): linear, matmul with the weight transposed or as
  // [K, N], addmm, a bias in the call or added after it; then an activation (relu and tanh gelu
  // are cuBLASLt epilogues, the others fused kernels) and a residual add before or after it (of
  // the result's shape, broadcast now and then, or with alpha 2: both refused with the reason),
  // or a cast to float32. Weight and bias are inputs of their own in any layout (the cuBLASLt
  // call declines what it cannot read and runs ATen's linear). Not over special values: a huge
  // value times signed weights puts +huge and -huge in one sum, which no order of the sum gets
  // right.
  std::optional<Statement> gemm() {
    if (special_) return std::nullopt;
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    if (r == 0) return std::nullopt;
    static const std::vector<int64_t> widths = {1, 3, 8, 16, 33, 64, 100, 128, 256};
    const int64_t k = a.sizes.back(), n = chance(0.2) ? std::max<int64_t>(k, 1) : one_of(widths);
    const int64_t rows = numel(a.sizes) / std::max<int64_t>(k, 1);
    if (n * std::max<int64_t>(k, 1) > o_.max_elements || rows * n > o_.max_elements) return std::nullopt;
    // At most 2^27 multiply-adds: the CPU's 16-bit GEMMs and the float64 reference are slow.
    if (numel(a.sizes) * n > (int64_t{1} << 27)) return std::nullopt;
    Statement s;
    s.sizes = a.sizes;
    s.sizes.back() = n;
    s.reads = {a.name};
    s.ops = {"gemm"};
    const bool weight_kn = chance(0.15);  // matmul(a, M) with M = W^T an input [K, N]
    const std::string w = new_input(weight_kn ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k});
    s.reads.push_back(w);
    std::string b;
    if (chance(0.6)) {
      b = new_input({n});
      s.reads.push_back(b);
    }
    const int form = weight_kn ? 1 : pick(4);
    std::string e;
    if (form == 1) {
      e = "torch.matmul(" + a.name + ", " + w + (weight_kn ? "" : ".t()") + ")" + (b.empty() ? "" : " + " + b);
      s.ops.push_back("matmul");
    } else if (form == 2 && r == 2 && !b.empty()) {
      e = "torch.addmm(" + b + ", " + a.name + ", " + w + ".t())";
      s.ops.push_back("addmm");
    } else if (form == 3 && !b.empty()) {
      e = "torch.linear(" + a.name + ", " + w + ") + " + b;
      s.ops.push_back("linear");
    } else {
      e = "torch.linear(" + a.name + ", " + w + (b.empty() ? "" : ", " + b) + ")";
      s.ops.push_back("linear");
    }
    // A residual: a live value of the result's shape (a is one where n == k), else an input made
    // for it; broadcast over the rows now and then.
    std::string residual;
    if (chance(0.5)) {
      std::vector<const Value*> same;
      for (const Value& v : live_)
        if (v.sizes == s.sizes) same.push_back(&v);
      if (!same.empty() && chance(0.7)) {
        residual = one_of(same)->name;
      } else {
        residual = new_input(chance(0.2) ? std::vector<int64_t>{n} : s.sizes);
      }
      s.reads.push_back(residual);
      s.ops.push_back("residual");
    }
    static const std::vector<std::pair<const char*, const char*>> acts = {
        {"torch.relu(A)", "relu"}, {"torch.gelu(A, approximate='tanh')", "gelu_tanh"}, {"torch.gelu(A)", "gelu"},
        {"torch.silu(A)", "silu"}, {"torch.sigmoid(A)", "sigmoid"}};
    const int act = pick(static_cast<int>(acts.size()) + 2) - 2;  // -2, -1: none
    auto apply = [&](const std::string& x) {
      return act < 0 ? x : replace(acts[act].first, "A", x);
    };
    auto add = [&](const std::string& x) {
      if (residual.empty()) return x;
      if (chance(0.1)) return "torch.add(" + x + ", " + residual + ", alpha=2)";
      return chance(0.5) ? "(" + x + ") + " + residual : residual + " + (" + x + ")";
    };
    const bool residual_first = chance(0.6);
    e = residual_first ? apply(add(e)) : add(apply(e));
    if (act >= 0) s.ops.push_back(acts[act].second);
    if (chance(0.15)) {
      e = "(" + e + ").float()";
      s.ops.push_back("to_float");
    }
    s.expr = e;
    return s;
  }

  // A new program input of these sizes in a layout of its own (a GEMM's weight, bias or
  // residual); not a live value other statements read.
  std::string new_input(std::vector<int64_t> sizes) {
    Input in;
    in.sizes = std::move(sizes);
    in.layout = layout_for(in.sizes);
    program_->inputs.push_back(in);
    return "x" + std::to_string(program_->inputs.size() - 1);
  }

  // Ops that depend on an element's index (passes/spell_index_ops.h) or on the elements before it
  // (cumsum: the row schedule's scans). argmax and argmin read a
  // program input: an index is exact only where the values are eager's bit for bit (a computed
  // value one rounding off can move it to another element, as right as eager's).
  std::optional<Statement> index_op() {
    Statement s;
    const int kind = pick(6);
    if (kind <= 1) {
      std::vector<const Value*> inputs;
      for (const Value& v : live_)
        if (v.name[0] == 'x') inputs.push_back(&v);
      const Value& a = *one_of(inputs);
      const int64_t r = static_cast<int64_t>(a.sizes.size());
      if (r == 0 || numel(a.sizes) == 0) return std::nullopt;  // (an empty row has no index: eager raises)
      const int64_t d = pick(static_cast<int>(r));
      const std::string dim = std::to_string(chance(0.5) ? d - r : d);
      s.reads = {a.name};
      s.sizes = a.sizes;
      s.sizes.erase(s.sizes.begin() + d);
      const std::string as_values = ".to(" + a.name + ".dtype)";
      if (kind == 0) {
        const std::string op = chance(0.5) ? "argmax" : "argmin";
        s.expr = "torch." + op + "(" + a.name + ", " + dim + ")" + as_values;
        s.ops = {op};
      } else {
        const std::string op = chance(0.5) ? "max" : "min";
        const std::string call = "torch." + op + "(" + a.name + ", " + dim + ")";
        s.expr = call + "[0] - " + call + "[1]" + as_values;
        s.ops = {op + "_indices"};
      }
      return s;
    }
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    s.reads = {a.name};
    s.sizes = a.sizes;
    if (kind == 2) {
      if (r < 2) return std::nullopt;
      const std::string op = chance(0.5) ? "triu" : "tril";
      s.expr = "torch." + op + "(" + a.name + ", " + std::to_string(pick(7) - 3) + ")";
      s.ops = {op};
      return s;
    }
    if (r == 0) return std::nullopt;
    if (kind == 5) {  // a scan, mostly along the last dim (the one the row schedule scans)
      const int64_t d = chance(0.7) ? r - 1 : pick(static_cast<int>(r));
      s.expr = "torch.cumsum(" + a.name + ", " + std::to_string(chance(0.5) ? d - r : d) + ")";
      s.ops = {"cumsum"};
      return s;
    }
    if (kind == 3) {
      std::string reps;
      std::vector<int64_t> sizes;
      const bool lead = chance(0.3);
      if (lead) {
        sizes.push_back(2);
        reps = "2, ";
      }
      for (int64_t i = 0; i < r; ++i) {
        const int64_t k = one_of(std::vector<int64_t>{1, 1, 2, 3});
        sizes.push_back(a.sizes[i] * k);
        reps += std::to_string(k) + (i + 1 < r ? ", " : "");
      }
      s.expr = a.name + ".repeat(" + reps + ")";
      s.sizes = sizes;
      s.ops = {"repeat"};
      return s;
    }
    const int64_t d = pick(static_cast<int>(r));
    const int64_t k = 2 + pick(2);
    s.sizes[d] *= k;
    s.expr = "torch.repeat_interleave(" + a.name + ", " + std::to_string(k) + ", " + std::to_string(chance(0.5) ? d - r : d) + ")";
    s.ops = {"repeat_interleave"};
    return s;
  }

  std::optional<Statement> reduction() {
    const Value& a = operand();
    const int64_t r = static_cast<int64_t>(a.sizes.size());
    if (r == 0) return std::nullopt;
    Statement s;
    s.reads = {a.name};
    const int kind = pick(14);
    // Per-channel norms (dim 1), spelled as the ops they compute by passes/decompose_norms.
    if (kind >= 12) {
      if (r < 2) return std::nullopt;
      s.sizes = a.sizes;
      const int64_t c = a.sizes[1];
      if (kind == 12) {
        std::vector<int64_t> divisors;
        for (int64_t g = 1; g <= c; ++g)
          if (c % g == 0) divisors.push_back(g);
        if (divisors.empty()) return std::nullopt;
        const int64_t g = divisors[static_cast<size_t>(pick(static_cast<int>(divisors.size())))];
        s.expr = "torch.group_norm(" + a.name + ", " + std::to_string(g) + ", None, None, 1e-05, True)";
        s.ops = {"group_norm"};
        return s;
      }
      // Inference statistics made in the graph (the shape-tensor cache keeps them).
      const std::string full = "torch.full([" + a.name + ".size(1)], ";
      const std::string like = ", dtype=" + a.name + ".dtype, device=" + a.name + ".device)";
      s.expr = "torch.batch_norm(" + a.name + ", None, None, " + full + "0.25" + like + ", " + full + "1.5" + like +
               ", False, 0.1, 1e-05, True)";
      s.ops = {"batch_norm"};
      return s;
    }
    // Shape-preserving normalizations.
    if (kind >= 9) {
      const int64_t d = pick(static_cast<int>(r)) - (chance(0.5) ? r : 0);
      s.sizes = a.sizes;
      if (kind == 9) {
        s.expr = (chance(0.5) ? "torch.softmax(" : "torch.log_softmax(") + a.name + ", " + std::to_string(d) + ")";
        s.ops = {"softmax"};
      } else if (kind == 10) {
        s.expr = "torch.layer_norm(" + a.name + ", [" + std::to_string(a.sizes.back()) + "])";
        s.ops = {"layer_norm"};
      } else {
        s.expr = a.name + " * torch.rsqrt(" + a.name + ".pow(2).mean(-1, keepdim=True) + 1e-6)";
        s.ops = {"rms_norm"};
      }
      return s;
    }
    static const std::vector<std::string> names = {"sum", "mean", "amax", "amin", "var", "std", "logsumexp", "sum", "mean"};
    const std::string op = names[kind];
    // All dims now and then; else one dim or a block of two.
    if (chance(0.1) && (op == "sum" || op == "mean")) {
      s.expr = a.name + "." + op + "()";
      s.ops = {op + "_all"};
      return s;
    }
    std::vector<int64_t> dims = {pick(static_cast<int>(r))};
    if (r >= 2 && chance(0.15) && dims[0] + 1 < r) dims.push_back(dims[0] + 1);
    const bool keepdim = chance(0.8);
    std::vector<int64_t> spelled = dims;
    if (chance(0.5)) for (auto& d : spelled) d -= r;  // negative dims
    if (op == "logsumexp" || op == "var" || op == "std") spelled.resize(1), dims.resize(1);
    const std::string args = dims_str(spelled) + ", keepdim=" + (keepdim ? "True" : "False");
    s.expr = op == "logsumexp" ? "torch.logsumexp(" + a.name + ", " + args + ")" : a.name + "." + op + "(" + args + ")";
    s.ops = {op};
    for (int64_t i = r - 1; i >= 0; --i) {
      if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
        s.sizes.insert(s.sizes.begin(), a.sizes[i]);
      } else if (keepdim) {
        s.sizes.insert(s.sizes.begin(), 1);
      }
    }
    return s;
  }

  static std::string replace(std::string s, const std::string& from, const std::string& to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
    return s;
  }

  std::mt19937_64 rng_;
  Options o_;
  bool special_ = false;  // the program's inputs hold special values (run())
  Program* program_ = nullptr;  // the program run() builds
  std::vector<Value> live_;
};

// Values with specials mixed in: NaN, infinities, -0.0, denormals, huge and tiny magnitudes.
void add_specials(at::Tensor& t) {
  if (t.numel() == 0) return;
  // Huge values have one sign: +huge and -huge in one sum cancel in an order-dependent way (in
  // double too: 1e30 absorbs every term below 1e14), which no summation order gets right.
  const double huge = t.scalar_type() == c10::kHalf ? 3e4 : 1e30;
  const std::vector<double> specials = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(), -0.0, 1e-40, huge, 1e-30, -1e-30};
  auto flat = t.reshape({-1});
  const auto mask = torch::rand({flat.numel()}, flat.options().dtype(at::kFloat)) < 0.02;
  const auto which = torch::randint(0, static_cast<int64_t>(specials.size()), {flat.numel()},
                                    flat.options().dtype(at::kLong));
  auto values = torch::tensor(specials, flat.options().dtype(at::kDouble)).index_select(0, which).to(flat.scalar_type());
  flat.copy_(torch::where(mask, values, flat));
}

}  // namespace

at::Tensor make_input(const Input& in, c10::ScalarType dtype, c10::Device device, Values values) {
  const auto opts = torch::TensorOptions().device(device);
  auto fresh = [&](std::vector<int64_t> sizes) {
    at::Tensor t = torch::randn(sizes, opts).to(dtype);
    if (values == Values::Special) add_specials(t);
    return t;
  };
  std::vector<int64_t> s = in.sizes;
  switch (in.layout) {
    case Layout::Contiguous: return fresh(s);
    case Layout::Sliced: {
      const int64_t n = s.back();
      s.back() += 5;
      return fresh(s).narrow(-1, 2, n);
    }
    case Layout::Transposed: {
      if (s.size() < 2) return fresh(s);
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      return fresh(s).transpose(-1, -2);
    }
    case Layout::Expanded: {
      // Size 1 in the first dim longer than 1 (a stride of 0 there), expanded back.
      for (auto& d : s) {
        if (d > 1) {
          d = 1;
          break;
        }
      }
      return fresh(s).expand(in.sizes);
    }
    case Layout::ChannelsLast: return fresh(s).contiguous(at::MemoryFormat::ChannelsLast);
    case Layout::Offset: {
      // A storage offset of 3 elements: misaligned for vector loads.
      return fresh({numel(s) + 3}).narrow(0, 3, numel(s)).view(s);
    }
  }
  return {};
}

std::string Program::source() const {
  std::string src = "def forward(self";
  for (size_t i = 0; i < inputs.size(); ++i) src += ", x" + std::to_string(i);
  src += "):\n";
  for (const auto& s : statements) {
    for (const auto& line : s.pre) src += "    " + line + "\n";
    src += "    " + s.name + " = " + s.expr + "\n";
  }
  src += "    return ";
  if (outputs.size() > 1) src += "(";
  for (size_t i = 0; i < outputs.size(); ++i) src += (i ? ", " : "") + outputs[i];
  if (outputs.size() > 1) src += ")";
  return src + "\n";
}

std::vector<std::string> Program::ops() const {
  std::vector<std::string> out;
  for (const auto& s : statements) out.insert(out.end(), s.ops.begin(), s.ops.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<c10::IValue> Program::make_inputs(c10::Device device, c10::ScalarType dt) const {
  std::vector<c10::IValue> in;
  for (const auto& i : inputs) in.emplace_back(make_input(i, dt, device, values));
  return in;
}

int64_t Program::max_elements() const {
  int64_t m = 0;
  for (const auto& i : inputs) m = std::max(m, numel(i.sizes));
  for (const auto& s : statements) m = std::max(m, numel(s.sizes));
  return m;
}

Program generate(uint64_t seed, uint64_t index, const Options& options) { return Generator(seed, index, options).run(); }

namespace {

// Drops the statements no output needs.
Program without_dead(Program p) {
  std::set<std::string> needed(p.outputs.begin(), p.outputs.end());
  std::vector<Statement> kept;
  for (auto it = p.statements.rbegin(); it != p.statements.rend(); ++it) {
    if (!needed.count(it->name)) continue;
    needed.insert(it->reads.begin(), it->reads.end());
    kept.insert(kept.begin(), *it);
  }
  p.statements = std::move(kept);
  return p;
}

}  // namespace

std::vector<Program> shrink_candidates(const Program& p) {
  std::vector<Program> out;
  if (p.outputs.size() > 1) {
    for (const auto& o : p.outputs) {
      Program c = p;
      c.outputs = {o};
      out.push_back(without_dead(c));
    }
  }
  // Return an earlier statement instead.
  for (size_t k = 0; k + 1 < p.statements.size(); ++k) {
    Program c = p;
    c.outputs = {p.statements[k].name};
    out.push_back(without_dead(c));
  }
  // A statement replaced by an operand of its shape (an input or an earlier value).
  std::map<std::string, std::vector<int64_t>> shapes;
  for (size_t i = 0; i < p.inputs.size(); ++i) shapes["x" + std::to_string(i)] = p.inputs[i].sizes;
  for (const auto& s : p.statements) shapes[s.name] = s.sizes;
  for (size_t k = 0; k < p.statements.size(); ++k) {
    for (const auto& r : p.statements[k].reads) {
      if (shapes[r] != p.statements[k].sizes || r == p.statements[k].name) continue;
      Program c = p;
      c.statements[k].pre.clear();
      c.statements[k].expr = r;
      c.statements[k].reads = {r};
      c.statements[k].ops.clear();
      out.push_back(without_dead(c));
    }
  }
  // Inputs made contiguous, one at a time.
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (p.inputs[i].layout == Layout::Contiguous) continue;
    Program c = p;
    c.inputs[i].layout = Layout::Contiguous;
    out.push_back(c);
  }
  if (p.values == Values::Special) {
    Program c = p;
    c.values = Values::Normal;
    out.push_back(c);
  }
  return out;
}

}  // namespace tffuzz
