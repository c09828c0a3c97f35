#include "attention_sweep.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/attention_backends.h"

namespace torchfuse_bench {
namespace {

enum class Mask { None, Padding, Causal };

struct Shape {
  int64_t batch, heads, kv_heads, tokens, head_dim;
  Mask mask;
};

std::vector<Shape> sweep_shapes() {
  std::vector<Shape> shapes;
  for (int64_t b : {1, 8}) {
    for (int64_t t : {64, 128, 197, 256, 512, 1024}) {
      for (Mask m : {Mask::None, Mask::Padding, Mask::Causal}) shapes.push_back({b, 12, 12, t, 64, m});
    }
    for (int64_t t : {128, 512}) {
      shapes.push_back({b, 16, 16, t, 128, Mask::None});
      shapes.push_back({b, 16, 16, t, 128, Mask::Padding});
      shapes.push_back({b, 32, 4, t, 64, Mask::Causal});  // grouped heads, Llama's
    }
  }
  return shapes;
}

const char* mask_name(Mask m) {
  switch (m) {
    case Mask::Padding: return "padding";
    case Mask::Causal: return "causal";
    default: return "none";
  }
}

// One timed call; the choice it recorded (empty `call` when it timed nothing).
torchfuse::runtime::AttentionBackendChoice time_shape(const Shape& s) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool, bool, bool, int64_t, bool)>();
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  const at::Tensor all = torch::randn({s.batch, s.tokens, s.heads + 2 * s.kv_heads, s.head_dim}, o);
  const at::Tensor q = all.narrow(2, 0, s.heads).transpose(1, 2);
  const at::Tensor k = all.narrow(2, s.heads, s.kv_heads).transpose(1, 2);
  const at::Tensor v = all.narrow(2, s.heads + s.kv_heads, s.kv_heads).transpose(1, 2);
  c10::optional<at::Tensor> mask;
  if (s.mask == Mask::Padding) {  // Hugging Face's: the last quarter of the keys at the dtype's lowest value
    at::Tensor m = torch::zeros({s.batch, 1, 1, s.tokens}, o);
    m.narrow(3, s.tokens - s.tokens / 4, s.tokens / 4).fill_(static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest()));
    mask = m;
  }
  const size_t before = torchfuse::runtime::attention_backend_choices().size();
  op.call(q, k, v, mask, 1.0 / std::sqrt(static_cast<double>(s.head_dim)), s.mask == Mask::Causal,
          /*mask_prepared=*/true, s.kv_heads != s.heads, /*mask_kind=*/0, /*timed=*/true);
  torch::cuda::synchronize();
  const auto choices = torchfuse::runtime::attention_backend_choices();
  return choices.size() > before ? choices.back() : torchfuse::runtime::AttentionBackendChoice{};
}

// The time of the candidate whose name starts with `prefix` ("" where it was not a candidate).
std::string time_of(const torchfuse::runtime::AttentionBackendChoice& r, const std::string& prefix) {
  for (size_t i = 0; i < r.backends.size() && i < r.us.size(); ++i) {
    if (r.backends[i].rfind(prefix, 0) != 0) continue;
    if (r.us[i] <= 0) return "declined";
    std::ostringstream os;
    os << std::fixed << std::setprecision(2) << r.us[i];
    return os.str();
  }
  return "";
}

}  // namespace

int run_attention_sweep(std::ostream& out) {
  if (!torch::cuda::is_available()) {
    out << "torchfuse_bench --attention-sweep: no CUDA GPU available; nothing to measure.\n";
    return 0;
  }
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  out << "GPU us per call of a CUDA graph of 8 calls (bf16; q, k, v views of one projection):\n\n"
      << "| batch | heads (kv) | tokens | head dim | mask | ATen's pick | flash | torchfuse | torchfuse, keys split | kept |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
  int status = 0;
  for (const Shape& s : sweep_shapes()) {
    out << "| " << s.batch << " | " << s.heads;
    if (s.kv_heads != s.heads) out << " (" << s.kv_heads << ")";
    out << " | " << s.tokens << " | " << s.head_dim << " | " << mask_name(s.mask) << " | ";
    try {
      const auto r = time_shape(s);
      if (r.call.empty()) {
        out << " |  |  |  | not timed |\n";
        continue;
      }
      out << r.backends[0] << " " << time_of(r, "aten") << " | " << time_of(r, "flash") << " | "
          << time_of(r, "torchfuse") << " | " << time_of(r, "torchfuse (keys") << " | "
          << r.backends[static_cast<size_t>(r.chosen)];
      if (!r.why_not.empty()) out << " (" << r.why_not.substr(0, 120) << ")";
      out << " |\n";
    } catch (const std::exception& e) {
      out << " |  |  |  | error: " << std::string(e.what()).substr(0, 200) << " |\n";
      status = 1;
    }
    out.flush();
  }
  return status;
}

}  // namespace torchfuse_bench
