// torchfuse's attention kernel body (codegen/attention_body.cuh), compiled as C++ and run on the
// CPU through an emulation of its device primitives (tests/emulated_warps.h), against the float64
// math: every schedule (warps splitting rows or keys), both dtypes, masks read one key or two at
// a time, causal, grouped heads, element and vector loads, fully masked and NaN rows. Each case
// also checks that the runtime picks the emulated variant for the call (attention_kernel_spec),
// and runs it with the arguments and grid the runtime packs (pack_attention_arguments).
// The GPU tests (test_attention_gpu.cpp) run the same body as NVRTC builds it.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "codegen/attention.h"
#include "runtime/attention_kernel.h"
#include "runtime/launch_util.h"
#include "tests/emulated_warps.h"

namespace {

namespace cg = torchfuse::codegen;
namespace rt = torchfuse::runtime;

struct Call {
  at::Tensor q, k, v;
  c10::optional<at::Tensor> mask;
  double scale = 0.125;
  bool causal = false;
};

// Runs the emulated kernel on a call with the arguments and grid the runtime launches it with.
template <class Params>
at::Tensor emulate(void (*kernel)(Params), const cg::AttentionSpec& spec, const Call& c) {
  const at::Tensor out = rt::attention_kernel_output(c.q);
  rt::ParamPacker words;
  const int64_t blocks = rt::pack_attention_arguments(words, spec, c.q, c.k, c.v, c.mask, out, c.scale);
  if (words.size() * sizeof(int64_t) != sizeof(Params)) throw std::logic_error("the kernel's params and the runtime's words differ in size");
  Params p;
  std::memcpy(&p, words.data(), sizeof p);
  tfemu::launch(kernel, p, blocks, 32 * spec.warps);
  return out;
}

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"  // the body's #pragma unroll
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(threads)
#define __shared__ static  // blocks run one after another: one copy serves each in turn
#define __align__(bytes) __attribute__((aligned(bytes)))
#define TF_KERNEL_NAME kernel

// One namespace a variant: the spec's constants as codegen/attention.cpp writes them, then the
// emulated primitives and the kernel's body.
#define TF_VARIANT_CONSTANTS(D, W, S, KB, H, M, P, C, V)                                       \
  constexpr int kD = D, kWarps = W, kSplit = S, kKeyBlock = KB;                                 \
  constexpr bool kHalf = H, kMask = M, kMaskPairs = P, kCausal = C, kVec = V;                   \
  inline cg::AttentionSpec spec() {                                                             \
    cg::AttentionSpec s;                                                                        \
    s.dtype = H ? c10::ScalarType::Half : c10::ScalarType::BFloat16;                            \
    s.head_dim = D;                                                                             \
    s.warps = W;                                                                                \
    s.key_split = S;                                                                            \
    s.key_block = KB;                                                                           \
    s.mask = M;                                                                                 \
    s.mask_pairs = P;                                                                           \
    s.causal = C;                                                                               \
    s.vector_loads = V;                                                                         \
    return s;                                                                                   \
  }

namespace rows_bf16_d32_w2_mask {
TF_VARIANT_CONSTANTS(32, 2, 1, 64, false, true, false, false, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace rows_bf16_d32_w2_mask
namespace keys_f16_d16_w4_pairs_causal {
TF_VARIANT_CONSTANTS(16, 4, 4, 64, true, true, true, true, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace keys_f16_d16_w4_pairs_causal
namespace keys_bf16_d64_w4_kb32_pairs {
TF_VARIANT_CONSTANTS(64, 4, 4, 32, false, true, true, false, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace keys_bf16_d64_w4_kb32_pairs
namespace rows_f16_d32_w1_mask_elements {
TF_VARIANT_CONSTANTS(32, 1, 1, 64, true, true, false, false, false)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace rows_f16_d32_w1_mask_elements
namespace rows_bf16_d16_w4_causal {
TF_VARIANT_CONSTANTS(16, 4, 1, 64, false, false, false, true, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace rows_bf16_d16_w4_causal
namespace keys_bf16_d80_w2_kb32_mask {
TF_VARIANT_CONSTANTS(80, 2, 2, 32, false, true, false, false, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace keys_bf16_d80_w2_kb32_mask
namespace keys_f16_d32_w4_elements {
TF_VARIANT_CONSTANTS(32, 4, 4, 64, true, true, false, false, false)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace keys_f16_d32_w4_elements
namespace rows_bf16_d64_w1_pairs {
TF_VARIANT_CONSTANTS(64, 1, 1, 64, false, true, true, false, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace rows_bf16_d64_w1_pairs
namespace keys_bf16_d128_w2_kb32_causal {
TF_VARIANT_CONSTANTS(128, 2, 2, 32, false, false, false, true, true)
#include "tests/emulated_attention_device.inc"
#include "codegen/attention_body.cuh"
}  // namespace keys_bf16_d128_w2_kb32_causal

#undef TF_VARIANT_CONSTANTS
#undef TF_KERNEL_NAME
#undef __align__
#undef __shared__
#undef __launch_bounds__
#undef __global__
#undef __forceinline__
#undef __device__
#pragma GCC diagnostic pop

namespace {

at::Tensor reference(const Call& c) {
  const int64_t groups = c.q.size(1) / c.k.size(1);
  const at::Tensor k = c.k.repeat_interleave(groups, 1).to(torch::kDouble);
  const at::Tensor v = c.v.repeat_interleave(groups, 1).to(torch::kDouble);
  at::Tensor s = torch::matmul(c.q.to(torch::kDouble), k.transpose(-2, -1)) * c.scale;
  if (c.mask) s = s + c.mask->to(torch::kDouble);
  if (c.causal) {
    const at::Tensor keep = torch::ones({c.q.size(2), c.k.size(2)}, s.options().dtype(torch::kBool)).tril();
    s = s.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return torch::matmul(torch::softmax(s, -1), v);
}

std::string describe(const cg::AttentionSpec& s) {
  return std::string(s.dtype == c10::ScalarType::Half ? "f16" : "bf16") + " d" + std::to_string(s.head_dim) + " w" +
         std::to_string(s.warps) + " split " + std::to_string(s.key_split) + " of " + std::to_string(s.key_block) +
         (s.mask ? " mask" : "") +
         (s.mask_pairs ? " pairs" : "") + (s.causal ? " causal" : "") + (s.vector_loads ? " vec" : " elements");
}

// The emulated variant's result against the float64 math, after checking the runtime picks that
// variant for the call on a device of `sm_count` multiprocessors.
void check(const std::string& name, at::Tensor (*run)(const Call&), const cg::AttentionSpec& variant, const Call& c,
           rt::AttentionSchedule schedule, int sm_count, int64_t nan_rows = 0) {
  SCOPED_TRACE(name);
  const bool gqa = c.k.size(1) != c.q.size(1);
  ASSERT_EQ(rt::attention_kernel_unusable(c.q, c.k, c.v, c.mask, gqa), "not CUDA tensors");
  const cg::AttentionSpec picked =
      rt::attention_kernel_spec(c.q, c.k, c.v, rt::attention_kernel_output(c.q), c.mask, c.causal, schedule, sm_count);
  ASSERT_EQ(describe(picked), describe(variant)) << "the runtime picks another variant for this call";
  const at::Tensor got = run(c);
  const at::Tensor want = reference(c);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.scalar_type(), c.q.scalar_type());
  const double tol = c.q.scalar_type() == torch::kHalf ? 1e-2 : 2e-2;
  const at::Tensor g = got.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, want, tol, tol, /*equal_nan=*/true))
      << "max error " << (g - want).abs().nan_to_num(0, 0, 0).max().item<double>() << ", NaN got "
      << g.isnan().sum().item<int64_t>() << " want " << want.isnan().sum().item<int64_t>();
  EXPECT_EQ(g.isnan().all(-1).sum().item<int64_t>(), nan_rows);
  EXPECT_EQ(g.isnan().sum().item<int64_t>(), nan_rows * c.q.size(3)) << "NaN outside the NaN rows";
}

at::Tensor randn(at::IntArrayRef sizes, c10::ScalarType dt) { return torch::randn(sizes, torch::dtype(dt)); }

// Hugging Face's padding mask, the last quarter of the keys at the dtype's lowest value, with
// random values on the others: a pair read in the wrong order shows.
template <class T>
at::Tensor padding_mask(int64_t batch, int64_t keys, c10::ScalarType dt) {
  at::Tensor m = torch::randn({batch, 1, 1, keys}, torch::dtype(dt));
  m.narrow(3, keys - keys / 4, keys / 4).fill_(static_cast<double>(std::numeric_limits<T>::lowest()));
  return m;
}

TEST(AttentionKernelEmulated, RowsScheduleMatchesFloat64) {
  torch::manual_seed(31);
  {  // bf16, two warps of 16 rows a block, a full mask of an odd key length (one entry a load)
    Call c{randn({1, 2, 40, 32}, torch::kBFloat16), randn({1, 2, 75, 32}, torch::kBFloat16),
           randn({1, 2, 75, 32}, torch::kBFloat16), randn({1, 2, 40, 75}, torch::kBFloat16)};
    check("bf16 d32 full mask", [](const Call& x) { return emulate(&rows_bf16_d32_w2_mask::kernel, rows_bf16_d32_w2_mask::spec(), x); },
          rows_bf16_d32_w2_mask::spec(), c, rt::AttentionSchedule::kRows, /*sm_count=*/3);
  }
  {  // f16, one warp a block, transposed keys (element loads), grouped heads, a rank-1 mask
    Call c{randn({2, 4, 17, 32}, torch::kHalf), randn({2, 2, 32, 33}, torch::kHalf).transpose(2, 3),
           randn({2, 2, 33, 32}, torch::kHalf), randn({33}, torch::kHalf)};
    check("f16 d32 grouped, transposed keys",
          [](const Call& x) { return emulate(&rows_f16_d32_w1_mask_elements::kernel, rows_f16_d32_w1_mask_elements::spec(), x); },
          rows_f16_d32_w1_mask_elements::spec(), c, rt::AttentionSchedule::kRows, /*sm_count=*/1000);
  }
  {  // bf16, four warps a block, causal over 70 rows and keys
    Call c{randn({1, 1, 70, 16}, torch::kBFloat16), randn({1, 1, 70, 16}, torch::kBFloat16),
           randn({1, 1, 70, 16}, torch::kBFloat16), c10::nullopt, 0.25, true};
    check("bf16 d16 causal", [](const Call& x) { return emulate(&rows_bf16_d16_w4_causal::kernel, rows_bf16_d16_w4_causal::spec(), x); },
          rows_bf16_d16_w4_causal::spec(), c, rt::AttentionSchedule::kRows, /*sm_count=*/1);
  }
  {  // BERT's layout: q, k, v head-major views of one projection, Hugging Face's padding mask in pairs
    const at::Tensor all = randn({1, 24, 6, 64}, torch::kBFloat16);
    Call c{all.narrow(2, 0, 2).transpose(1, 2), all.narrow(2, 2, 2).transpose(1, 2), all.narrow(2, 4, 2).transpose(1, 2),
           padding_mask<c10::BFloat16>(1, 24, torch::kBFloat16)};
    check("bf16 d64 projection views, padding mask",
          [](const Call& x) { return emulate(&rows_bf16_d64_w1_pairs::kernel, rows_bf16_d64_w1_pairs::spec(), x); },
          rows_bf16_d64_w1_pairs::spec(), c, rt::AttentionSchedule::kRows, /*sm_count=*/1000);
    EXPECT_TRUE(rt::attention_kernel_output(c.q).transpose(1, 2).is_contiguous()) << "the query's layout";
  }
}

TEST(AttentionKernelEmulated, KeysScheduleMatchesFloat64) {
  torch::manual_seed(32);
  {  // f16, four warps splitting 200 keys of 16 rows, causal: the rows' keys end in every block
    // (the later warps of the first tiles see none)
    Call c{randn({2, 1, 150, 16}, torch::kHalf), randn({2, 1, 200, 16}, torch::kHalf), randn({2, 1, 200, 16}, torch::kHalf),
           padding_mask<c10::Half>(2, 200, torch::kHalf), 0.25, true};
    check("f16 d16 split 4 causal",
          [](const Call& x) { return emulate(&keys_f16_d16_w4_pairs_causal::kernel, keys_f16_d16_w4_pairs_causal::spec(), x); },
          keys_f16_d16_w4_pairs_causal::spec(), c, rt::AttentionSchedule::kKeys, /*sm_count=*/132);
  }
  {  // f16, four warps splitting 300 transposed keys (element loads) of grouped heads, a full mask
    Call c{randn({1, 4, 20, 32}, torch::kHalf), randn({1, 2, 32, 300}, torch::kHalf).transpose(2, 3),
           randn({1, 2, 300, 32}, torch::kHalf),
           randn({1, 4, 20, 301}, torch::kHalf).narrow(3, 0, 300)};  // rows 301 apart: one entry a load
    check("f16 d32 split 4, grouped, transposed keys",
          [](const Call& x) { return emulate(&keys_f16_d32_w4_elements::kernel, keys_f16_d32_w4_elements::spec(), x); },
          keys_f16_d32_w4_elements::spec(), c, rt::AttentionSchedule::kKeys, /*sm_count=*/132);
  }
  {  // bf16, two warps splitting 90 keys in blocks of 32 (blocks of 64 split as far, in more registers), head dim 80,
     // a full mask of odd row stride (one entry a load)
    Call c{randn({1, 1, 5, 80}, torch::kBFloat16), randn({1, 1, 90, 80}, torch::kBFloat16),
           randn({1, 1, 90, 80}, torch::kBFloat16), randn({1, 1, 5, 91}, torch::kBFloat16).narrow(3, 0, 90)};
    check("bf16 d80 split 2 in blocks of 32, masked",
          [](const Call& x) { return emulate(&keys_bf16_d80_w2_kb32_mask::kernel, keys_bf16_d80_w2_kb32_mask::spec(), x); },
          keys_bf16_d80_w2_kb32_mask::spec(), c, rt::AttentionSchedule::kKeys, /*sm_count=*/132);
  }
  {  // Llama's layout at batch 1: head dim 128, grouped heads, causal, q, k, v views of one
     // projection; two warps splitting blocks of 32 keys (blocks of 64 would not fit two)
    const at::Tensor all = randn({1, 70, 8, 128}, torch::kBFloat16);
    Call c{all.narrow(2, 0, 4).transpose(1, 2), all.narrow(2, 4, 2).transpose(1, 2), all.narrow(2, 6, 2).transpose(1, 2),
           c10::nullopt, 1.0 / std::sqrt(128.0), true};
    check("bf16 d128 split 2 in blocks of 32, grouped, causal",
          [](const Call& x) { return emulate(&keys_bf16_d128_w2_kb32_causal::kernel, keys_bf16_d128_w2_kb32_causal::spec(), x); },
          keys_bf16_d128_w2_kb32_causal::spec(), c, rt::AttentionSchedule::kKeys, /*sm_count=*/132);
  }
}

// Rows whose every score is -inf, or with a NaN among them, come out NaN (eager's softmax) when
// the warps split the keys too: row 3 masked everywhere, row 5 with a NaN in the second warp's
// keys; the other rows are unaffected.
TEST(AttentionKernelEmulated, KeysScheduleKeepsNaNRows) {
  torch::manual_seed(33);
  at::Tensor mask = randn({1, 1, 20, 130}, torch::kBFloat16);
  mask[0][0][3].fill_(-std::numeric_limits<double>::infinity());
  mask[0][0][5][100] = std::numeric_limits<double>::quiet_NaN();
  Call c{randn({1, 3, 20, 64}, torch::kBFloat16), randn({1, 3, 130, 64}, torch::kBFloat16),
         randn({1, 3, 130, 64}, torch::kBFloat16), mask};
  check("bf16 d64 split 4 in blocks of 32, NaN rows",
        [](const Call& x) { return emulate(&keys_bf16_d64_w4_kb32_pairs::kernel, keys_bf16_d64_w4_kb32_pairs::spec(), x); },
        keys_bf16_d64_w4_kb32_pairs::spec(), c, rt::AttentionSchedule::kKeys, /*sm_count=*/132, /*nan_rows=*/2 * 3);
}

// Which schedules the runtime offers: the keys split as far as the head dim's shared memory and
// the key blocks go, and timed beside the rows schedule only where that leaves the device short
// of warps.
TEST(AttentionKernelEmulated, KeySplitChoices) {
  EXPECT_EQ(cg::attention_max_key_split(16, 64), 4);
  EXPECT_EQ(cg::attention_max_key_split(32, 64), 4);
  EXPECT_EQ(cg::attention_max_key_split(48, 64), 2);
  EXPECT_EQ(cg::attention_max_key_split(80, 64), 2);
  EXPECT_EQ(cg::attention_max_key_split(96, 64), 1);
  EXPECT_EQ(cg::attention_max_key_split(128, 64), 1);
  EXPECT_EQ(cg::attention_max_key_split(80, 32), 4);
  EXPECT_EQ(cg::attention_max_key_split(96, 32), 2);
  EXPECT_EQ(cg::attention_max_key_split(128, 32), 2);
  auto split = [](int64_t d, int64_t keys) {
    const rt::KeySplit s = rt::attention_key_split(d, keys);
    return std::to_string(s.ways) + " of " + std::to_string(s.key_block);
  };
  EXPECT_EQ(split(64, 32), "1 of 64");
  EXPECT_EQ(split(64, 64), "2 of 32");
  EXPECT_EQ(split(64, 65), "2 of 32");  // 3 blocks of 32 keep as many warps busy as 2 of 64, in fewer registers
  EXPECT_EQ(split(80, 90), "2 of 32");  // blocks of 64 split 2 ways spill at head dim 80
  EXPECT_EQ(split(80, 200), "4 of 32");
  EXPECT_EQ(split(48, 96), "2 of 32");
  EXPECT_EQ(split(48, 129), "4 of 32");
  EXPECT_EQ(split(64, 128), "4 of 32");  // BERT
  EXPECT_EQ(split(32, 1000), "4 of 64");
  EXPECT_EQ(split(128, 128), "2 of 32");  // Llama
  EXPECT_EQ(split(128, 1000), "2 of 32");
  const auto o = torch::dtype(torch::kBFloat16);
  const at::Tensor bert_q = torch::empty({1, 12, 128, 64}, o), bert_k = torch::empty({1, 12, 128, 64}, o);
  EXPECT_TRUE(rt::attention_key_split_worth_timing(bert_q, bert_k, 132));  // 96 warps on 132 multiprocessors
  const at::Tensor b8_q = torch::empty({8, 12, 128, 64}, o), b8_k = torch::empty({8, 12, 128, 64}, o);
  EXPECT_FALSE(rt::attention_key_split_worth_timing(b8_q, b8_k, 132));  // 768 warps
  const at::Tensor llama_q = torch::empty({1, 32, 128, 128}, o), llama_k = torch::empty({1, 8, 128, 128}, o);
  EXPECT_TRUE(rt::attention_key_split_worth_timing(llama_q, llama_k, 132));  // 256 warps
  const at::Tensor one_block = torch::empty({1, 12, 32, 64}, o);
  EXPECT_FALSE(rt::attention_key_split_worth_timing(bert_q, one_block, 132));  // 32 keys: nothing to split
  // A mask is read in pairs only where its keys are contiguous and every stride and the key count even.
  const at::Tensor q = torch::empty({1, 2, 8, 32}, o), k = torch::empty({1, 2, 10, 32}, o);
  auto pairs = [&](const at::Tensor& m) {
    return rt::attention_kernel_spec(q, k, k, rt::attention_kernel_output(q), m, false, rt::AttentionSchedule::kRows, 132)
        .mask_pairs;
  };
  EXPECT_TRUE(pairs(torch::zeros({1, 1, 1, 10}, o)));
  EXPECT_TRUE(pairs(torch::zeros({1, 2, 8, 10}, o)));
  EXPECT_FALSE(pairs(torch::zeros({1, 2, 10, 8}, o).transpose(2, 3)));
  EXPECT_FALSE(pairs(torch::zeros({1, 1, 1, 1}, o)));
  EXPECT_FALSE(pairs(torch::zeros({1, 1, 8, 11}, o).narrow(3, 0, 10)));  // rows 11 apart
  EXPECT_FALSE(pairs(torch::zeros({1, 1, 1, 11}, o).narrow(3, 1, 10)));  // data 2 bytes off
}

// The mask's strides packed for the kernel are those of the mask broadcast to the scores by
// ATen's expand, whatever the mask's rank and whichever dims it broadcasts.
TEST(AttentionKernelEmulated, PackedMaskStridesAreThoseOfTheBroadcastMask) {
  const auto o = torch::TensorOptions().dtype(torch::kBFloat16);
  const at::Tensor q = torch::empty({2, 3, 8, 32}, o), k = torch::empty({2, 3, 10, 32}, o);
  const at::Tensor out = rt::attention_kernel_output(q);
  const std::vector<at::Tensor> masks = {
      torch::empty({10}, o),           torch::empty({8, 10}, o),         torch::empty({1, 10}, o),
      torch::empty({3, 1, 10}, o),     torch::empty({2, 1, 1, 10}, o),   torch::empty({2, 3, 8, 10}, o),
      torch::empty({1, 1, 10, 8}, o).transpose(2, 3), torch::empty({2, 3, 8, 20}, o).narrow(3, 5, 10),
      torch::empty({1, 1, 1, 1}, o)};
  for (const at::Tensor& m : masks) {
    const cg::AttentionSpec spec = rt::attention_kernel_spec(q, k, k, out, m, false, rt::AttentionSchedule::kRows, 132);
    rt::ParamPacker words;
    rt::pack_attention_arguments(words, spec, q, k, k, m, out, 0.125);
    // Five pointers, six sizes, then the strides of q, k, v, the mask and the output, four each.
    const auto* w = static_cast<const int64_t*>(words.data());
    const at::Tensor want = m.expand({2, 3, 8, 10});
    EXPECT_EQ(w[3], static_cast<int64_t>(reinterpret_cast<intptr_t>(m.data_ptr()))) << m.sizes();
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(w[5 + 6 + 3 * 4 + i], want.stride(i)) << "mask " << m.sizes() << " strides " << m.strides() << " dim " << i;
    }
  }
}

}  // namespace
