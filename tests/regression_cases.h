// Graphs that random testing found wrong (issues 28 and 29): wrong output shapes, wrong values,
// internal errors thrown to the user, kernels that failed to build. The CPU tests check their
// plans and NVRTC builds; the GPU tests run them against eager and the float64 reference.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "tests/fuzz/program.h"
#include "tests/test_util.h"

namespace tftest {

// Inputs as the random runs built them (tffuzz::make_input: "sliced", "transposed"...).
using Layout = tffuzz::Layout;
using InputSpec = tffuzz::Input;

struct RegressionCase {
  std::string name;
  c10::ScalarType dtype;
  std::vector<InputSpec> inputs;
  std::string body;  // the forward's body, after "def forward(self, x0, x1, ...):"
};

inline torch::jit::Module regression_module(const RegressionCase& c) {
  std::string args;
  for (size_t i = 0; i < c.inputs.size(); ++i) args += ", x" + std::to_string(i);
  return module_from("def forward(self" + args + "):\n" + c.body);
}

inline std::vector<c10::IValue> regression_inputs(const RegressionCase& c, c10::Device device) {
  std::vector<c10::IValue> in;
  for (const auto& s : c.inputs) in.emplace_back(tffuzz::make_input(s, c.dtype, device));
  return in;
}

inline std::vector<RegressionCase> regression_cases() {
  using L = Layout;
  const auto f32 = c10::kFloat, f16 = c10::kHalf, bf16 = c10::kBFloat16;
  return {
      // ---- issue 28 ----
      {"i28_1_logsumexp_keepdim_operand_shape", bf16, {{{1, 255, 3}, L::Sliced}, {{1, 255, 1}}},
       "    t0 = torch.maximum(x1, x0)\n"
       "    t1 = torch.logsumexp(t0, -1, keepdim=True)\n"
       "    return t1 / (torch.abs(x1) + 1.0)\n"},
      {"i28_2_amax_times_broadcast_scalar_tensor", f32, {{{128, 1, 1024}, L::Sliced}, {{1, 1, 1}, L::Transposed}},
       "    t3 = x0.amax(-1, keepdim=True)\n"
       "    t4 = t3 * x1\n"
       "    t5 = torch.where(t4 > 0.1, t4, t4 * 0.2)\n"
       "    t6 = t5 / (torch.abs(t3) + 1.0)\n"
       "    return t4 * 0.37 + 1.25\n"},
      {"i28_3_var_plus_broadcast_then_sum", f16, {{{1000, 3}}, {{1, 1}, L::Transposed}, {{1000, 3}, L::Sliced}},
       "    t0 = x2.var(-1, keepdim=True)\n"
       "    t1 = t0 + x1\n"
       "    return t1.sum(-1, keepdim=True)\n"},
      {"i28_4_full_reduction_of_reduction", f16, {{{512}}, {{1}}, {{512}}},
       "    t0 = x2.amax(-1, keepdim=True)\n"
       "    t1 = t0 * torch.sigmoid(x1)\n"
       "    t2 = torch.logsumexp(t1, -1, keepdim=True)\n"
       "    t3 = t2 / (torch.abs(x2) + 1.0)\n"
       "    return t3 + t2\n"},
      {"i28_5_column_reduction_of_reduction", bf16, {{{7, 100}}, {{1, 1}, L::Transposed}},
       "    t0 = x0.amax(0, keepdim=True)\n"
       "    t1 = torch.minimum(t0, x1)\n"
       "    t2 = t1 - t1.mean(-1, keepdim=True)\n"
       "    t3 = torch.log_softmax(t2, 0)\n"
       "    t4 = t3 - t0\n"
       "    t5 = t4.var(0, keepdim=True)\n"
       "    t6 = torch.layer_norm(t5, [100])\n"
       "    return torch.silu(t6)\n"},
      {"i28_6_column_mean_of_broadcast_then_row_var", bf16, {{{512, 1024}}, {{512, 1}, L::Sliced}},
       "    t0 = torch.maximum(x1, x1)\n"
       "    t1 = t0.pow(2)\n"
       "    t2 = t1 - t1.mean(0, keepdim=True)\n"
       "    t3 = t2 + t0\n"
       "    t4 = t3 * x0\n"
       "    return t4.var(-1, keepdim=True)\n"},
      {"i28_7_sum_over_column_of_width_one", f16, {{{64, 1}, L::Sliced}},
       "    t0 = x0.sum(0, keepdim=True)\n"
       "    return torch.exp(torch.clamp(t0, -10.0, 10.0))\n"},
      {"i28_8_sum_of_size_one_dims_two_outputs", f32, {{{512, 3, 1}, L::Transposed}, {{512, 1, 1}, L::Sliced}},
       "    t0 = x1.sum(0, keepdim=True)\n"
       "    t1 = x0 * x0\n"
       "    t3 = x1 * t0\n"
       "    return (t3, t1)\n"},
      {"i28_9_var_over_size_one_then_sum", f32, {{{64, 1000, 7, 1}}},
       "    t0 = x0.var(-1, keepdim=True)\n"
       "    t1 = t0.sum(2, keepdim=True)\n"
       "    t2 = t1 * torch.sigmoid(t1)\n"
       "    return torch.minimum(t2, t1)\n"},
      // ---- issue 29 ----
      {"i29_1_amax_over_transposed_two_outputs", f32, {{{7, 255, 100}, L::Transposed}, {{7, 1, 1}, L::Transposed}},
       "    t0 = x0.amax(-1, keepdim=True)\n"
       "    t1 = t0 / (torch.abs(x1) + 1.0)\n"
       "    t2 = t1 / (torch.abs(t1) + 1.0)\n"
       "    return (t2, t1)\n"},
      {"i29_2_sum_gelu_maximum_broadcast", bf16, {{{64, 17}}, {{64, 17}}, {{1, 1}, L::Sliced}},
       "    t0 = x0.sum(-1, keepdim=True)\n"
       "    t1 = torch.gelu(t0, approximate='tanh')\n"
       "    t2 = torch.maximum(t1, x2)\n"
       "    return torch.exp(torch.clamp(t2, -10.0, 10.0))\n"},
      {"i29_3_mean_times_broadcast", f32, {{{7, 4097}, L::Sliced}, {{7, 4097}}, {{1, 1}}},
       "    t0 = x2 - x0\n"
       "    t1 = torch.silu(t0)\n"
       "    t2 = torch.erf(t1)\n"
       "    t3 = t2.mean(-1, keepdim=True)\n"
       "    return t3 * x2\n"},
      {"i29_4_layer_norm_then_column_mean", f32, {{{7, 128}, L::Sliced}, {{1, 128}}},
       "    t0 = torch.abs(x1)\n"
       "    t1 = t0 / (torch.abs(x1) + 1.0)\n"
       "    t2 = torch.layer_norm(x0, [128])\n"
       "    t3 = t2.mean(0, keepdim=True)\n"
       "    t4 = t3 * t3\n"
       "    t5 = t4 * t3\n"
       "    return t5 * t1\n"},
      {"i29_5_middle_sum_then_epilogue", f32, {{{1024, 64, 3}, L::Transposed}, {{1, 1, 3}}},
       "    t1 = x0 * x0\n"
       "    t2 = t1.sum(1, keepdim=True)\n"
       "    t3 = torch.log(torch.abs(t2) + 1.0)\n"
       "    t4 = t3 * 0.37 + 1.25\n"
       "    t5 = t4 * t4\n"
       "    t6 = torch.clamp(t5, -1.5, 2.0)\n"
       "    return x1 * torch.sigmoid(t6)\n"},
      {"i29_6_column_reductions_of_reductions", f32, {{{4097, 128, 1}}, {{4097, 128, 1}}},
       "    t0 = torch.logsumexp(x1, 1, keepdim=True)\n"
       "    t1 = t0.sum(0, keepdim=True)\n"
       "    t2 = torch.where(t1 > t1, t1, t1)\n"
       "    t5 = t0.var(0, keepdim=True)\n"
       "    t6 = torch.minimum(t5, t5)\n"
       "    return torch.where(t6 > t2, t6, t2)\n"},
      // ---- found by torchfuse_fuzz ----
      {"fuzz_s2_222_squeezed_rows_of_one_element", bf16, {{{4097, 128, 1, 1}}, {{4097, 128, 1, 1}}},
       "    t0 = x0.std(-1, keepdim=False)\n"
       "    t2 = x1.mean(3, keepdim=False)\n"
       "    return t0 / (torch.abs(t2) + 1.0)\n"},
      {"fuzz_s1_144_empty_rows", f32, {{{3, 0}}, {{1, 0}, L::Transposed}},
       "    t0 = torch.layer_norm(x0, [0])\n"
       "    t1 = x1 * torch.rsqrt(x1.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
       "    return (t0, t1, x0.sum(-1, keepdim=True))\n"},
      {"fuzz_s1_7908_squeezed_var_broadcast_over_columns", f32, {{{100, 100}}},
       "    t0 = x0.var(-1, keepdim=False)\n"
       "    return t0 * x0\n"},
      {"fuzz_s1_3751_squeezed_logsumexp_broadcast_over_columns", f32, {{{1000, 1000}}},
       "    t0 = torch.logsumexp(x0, 1, keepdim=False)\n"
       "    return t0 * x0\n"},
      {"fuzz_s1_6251_full_reduction_of_a_squeezed_reduction", bf16, {{{64, 128}}, {{1, 1}}, {{1, 128}}},
       "    t0 = x2.amax(-1, keepdim=False)\n"
       "    t2 = t0.sum()\n"
       "    t5 = torch.gelu(x2).amin(0, keepdim=False)\n"
       "    return torch.minimum(t5, t2)\n"},
      {"fuzz_s1_6164_bf16_compare_with_a_number", bf16, {{{100, 100, 31}}, {{1, 1, 31}}},
       "    t1 = x1.amin(2, keepdim=True)\n"
       "    return torch.where(x0 > 0.1, x0, t1)\n"},
      {"fuzz_s1_3007_half_number_in_a_bf16_product", f16, {{{64, 1000}}},
       "    t2 = x0.sum([0, 1], keepdim=False)\n"
       "    t4 = x0.to(15) * t2\n"
       "    return t4.mean(-2, keepdim=True)\n"},
      {"fuzz_s4_77_column_sum_with_an_empty_inner_dim", f32, {{{64, 512, 3, 0}}, {{1, 1, 1, 1}}},
       "    t1 = x0.sum(-3, keepdim=True)\n"
       "    t2 = x1.mean(3, keepdim=True)\n"
       "    return torch.maximum(t1, t2)\n"},
      {"fuzz_s1_1769_compare_a_bf16_mean", f32, {{{64, 146, 128}}},
       "    t0 = x0.to(15)\n"
       "    t1 = t0.mean(-2, keepdim=True)\n"
       "    return torch.where(t1 > 0.1, t1, t0)\n"},
      {"fuzz_s1_2350_compare_an_fp16_layer_norm", f16, {{{1024, 1, 512}}},
       "    t1 = x0 / (torch.abs(x0) + 1.0)\n"
       "    t2 = torch.layer_norm(x0, [512])\n"
       "    t4 = torch.maximum(x0, t1) / (torch.abs(t2) + 1.0)\n"
       "    return torch.where(t2 > 0.1, t2, t4)\n"},
      {"fuzz_s2_1394_squeezed_amin_joins_after_its_user", f32, {{{1024, 1024}}},
       "    t0 = torch.layer_norm(x0, [1024])\n"
       "    t3 = x0.amin(-1, keepdim=False)\n"
       "    return torch.minimum(t3, t0)\n"},
      // Rows whose values are all equal: eager's Welford mean is exact and its layer norm and
      // variance exactly 0; torchfuse's float mean was a rounding off (corrected two passes now).
      {"fuzz_s3_3274_layer_norm_of_equal_values", f32, {{{256}, L::Expanded}},
       "    return torch.layer_norm(x0, [256])\n"},
      {"fuzz_s2_4441_std_of_equal_values", f32, {{{64, 300}}, {{1, 300}, L::Expanded}},
       "    t0 = x1 * 7.25 + 3.0\n"
       "    return (t0.std(-1, keepdim=True), torch.var(t0 + x0 * 0.0, -1, keepdim=False))\n"},
      {"fuzz_s3_43_bf16_layer_norm_of_three_equal_values", bf16, {{{3}, L::Expanded}, {{5, 3}}},
       "    t0 = torch.exp(torch.clamp(x0 * 4.0 + 6.0, -20.0, 20.0))\n"
       "    return (torch.layer_norm(t0, [3]), torch.layer_norm(x1 + t0 * 0.0, [3]))\n"},
      // fp16 intermediates rounded as eager rounds them: t1 overflows to inf in eager, and
      // t1 - t1.half() is NaN there (the float64 reference, rounding only at the cast, gives
      // -inf); kept in a float register it was finite and the result 0.
      {"fuzz_s3_5246_fp16_product_overflows_as_in_eager", f16, {{{4096}}},
       "    t0 = x0 * 300.0\n"
       "    t1 = t0 * t0\n"
       "    return t1 - t1.half()\n"},
      {"fuzz_s3_174_bf16_where_after_rounded_log", bf16, {{{512, 384}}},
       "    t0 = x0 * 0.01 + 1.105\n"
       "    t1 = torch.log(t0)\n"
       "    return torch.where(t1 > 0.1, t1, x0)\n"},
      // One fp16 sum of 4,097 values near 4.6 made twice: stored by one kernel, kept in a float
      // register by the other; their difference was the register's rounding (7.95), eager's 0.
      // Reduction results now round as eager stores them.
      // A [255] value computed before a [255, 255] row reduction, also returned: it joined the
      // reduction group, which cannot write a column-aligned output (internal error; found once
      // views let the fuzzer flatten [255, 1] to [255]).
      {"fuzz_s5_340_column_value_returned_from_a_row_group", f32, {{{255, 255}}, {{255}}},
       "    t0 = torch.relu(x1) * 1.5\n"
       "    t1 = x0 * t0\n"
       "    t4 = t1 * torch.rsqrt(t1.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
       "    return (t4, t0)\n"},
      // unsqueeze of a 0-dim reduction result inside a pointwise group: the domain is [1].
      {"fuzz_s5_3088_unsqueeze_of_a_0dim_value", f16, {{{512}}},
       "    t2 = x0.amin(-1, keepdim=False)\n"
       "    return torch.relu(t2.unsqueeze(0)) * 1.5\n"},
      {"fuzz_s6_1713_fp16_sum_minus_the_same_sum_stored", f16, {{{4097, 64}}},
       "    t0 = torch.logsumexp(x0, 1, keepdim=False)\n"
       "    t1 = t0.sum(-1, keepdim=False)\n"
       "    t3 = t0.sum(-1, keepdim=True).amin(0, keepdim=True)\n"
       "    return t1 - t3\n"},
      // A row's max minus the row, where the row is a computed fp16 value: eager's difference is
      // exactly 0 at the max (here everywhere: the max is over a size-1 dim); the max of float
      // registers, rounded, minus the unrounded register was an ulp off. Values a max or min
      // reads now round as eager stores them (ir::Value::read_by_selection).
      {"fuzz_s5_1321_fp16_max_minus_the_values_it_read", f16, {{{6, 5, 7, 3}}},
       "    t0 = torch.relu(x0.unsqueeze(4)) * 1.5\n"
       "    t1 = t0.amax(-1, keepdim=True)\n"
       "    return t1 - t0\n"},
      {"fuzz_s5_1321_bf16_row_minus_its_min", bf16, {{{64, 333}}},
       "    t0 = torch.relu(x0 * 1.5)\n"
       "    return t0 - t0.amin(-1, keepdim=True)\n"},
      // layer_norm over a size-1 dim is exactly 0 in eager (x - mean(x) with mean(x) = x). The
      // kernel's x * (1 / 6) (hardsigmoid) fed the mean and the subtraction; the compiler
      // contracted the subtraction into fma(x, 1/6, -mean), which kept the product's rounding
      // error, scaled by 1 / sqrt(eps): 1.4e-5 where eager has 0 (fuzz seed 11, program 4475).
      // Products a reduction and another op share are written __fmul_rn (codegen/expr.cpp).
      {"fuzz_s11_4475_f32_layer_norm_of_one_element", f32, {{{7, 1, 64, 1}}},
       "    t1 = torch.hardsigmoid(x0)\n"
       "    t2 = torch.layer_norm(t1, [1])\n"
       "    return torch.relu(t2.flatten(2, 3)) * 1.5\n"},
      // The same with gelu's x * 0.5 * (1 + erf(x / sqrt(2))): a function whose last operation is
      // a multiply, which the fix above (products only) missed (GPU fuzz seed 54, program 471).
      // Values a reduction and another op share whose expression may end in a multiply are
      // rounded where made (tf_round_here).
      {"fuzz_s54_471_f32_layer_norm_of_gelu_of_one_element", f32, {{{128, 31, 1}, L::Offset}},
       "    return torch.layer_norm(torch.gelu(x0), [1])\n"},
      {"fuzz_s54_471_bf16_silu_minus_its_max_and_a_tanh_gelu_norm_of_one_element", bf16, {{{64, 7, 1}}},
       "    t0 = torch.silu(x0 * 2.0)\n"
       "    return (t0 - t0.amax(-1, keepdim=True)) * 3.0, torch.layer_norm(torch.gelu(x0, approximate='tanh'), [1])\n"},
      // Column passes reading an expanded input (stride 0 along the reduced dim, InnerBroadcast)
      // from the pass that computes from registers: its load named a row offset only the loading
      // loop had, and NVRTC rejected the kernel (a split looped pass, 784; a block per tile with
      // the column in registers, 789; fuzz seed 7).
      {"fuzz_s7_784_f32_split_log_softmax_of_expanded", f32, {{{255, 100}, L::Expanded}, {{255, 100}}},
       "    t0 = torch.log_softmax(x0, -2)\n"
       "    return t0\n"},
      {"fuzz_s7_789_f32_column_sum_where_expanded", f32, {{{100, 7, 7}, L::Expanded}, {{100, 7, 7}}, {{1, 1, 7}}},
       "    t0 = x1.sum(0, keepdim=True)\n"
       "    t1 = torch.where(t0 > 0.0, x0, 0.0)\n"
       "    return t1\n"},
      // Three chunks of one transposed input, each read through a tile of 64 x 65 floats in
      // static shared memory: 49920 bytes, past a block's 48 KiB, and ptxas rejected the kernel
      // (fuzz seed 7, program 550, GPU). Tiles shrink until they fit (codegen/layout.cpp).
      {"fuzz_s7_550_f16_three_tiled_chunks", f16, {{{512, 2340}, L::Transposed}},
       "    t4_0, t4_1, t4_2 = x0.chunk(3, 1)\n"
       "    return torch.relu(t4_0) * t4_1 + t4_2\n"},
      // A row of odd length (65537: one element a vector) writing a bool (t0 > 0.1) with an
      // eviction hint: tf_store_once took 2- to 16-byte values only and NVRTC rejected the
      // kernel (fuzz seed 83, program 466); the group ran through ATen.
      {"fuzz_s83_466_bf16_long_row_bool_store", bf16, {{{2, 3, 65537}}},
       "    t0 = torch.layer_norm(x0, [65537])\n"
       "    t2 = t0.amax(1, keepdim=True)\n"
       "    t3 = torch.fmod(t2 * t0, 0.75)\n"
       "    return torch.where(t0 > 0.1, t0, t3)\n"},
      // A logsumexp over an empty dim: the input has no data pointer (nullptr), and the row
      // kernel's load, hoisted above its bounds check by the compiler, read address 0 (fuzz seed
      // 83, program 698, GPU). Calls with an empty input run the group's ATen ops.
      {"fuzz_s83_698_bf16_logsumexp_of_empty", bf16, {{{0}, L::Sliced}},
       "    t0 = torch.logsumexp(x0, 0, keepdim=True)\n"
       "    t3 = torch.full_like(t0, 0.5) * t0\n"
       "    return torch.log1p(torch.abs(t3))\n"},
      // A row kernel over bf16 rows (vectors of 8) writing a float32 value too: its 32-byte
      // vector went to the hinted store, which takes 16 bytes at most, and NVRTC rejected the
      // kernel (fuzz seed 1, program 82: a bf16 group norm, whose float32 copy a size read made an
      // output; the sizes are read before the copy now, so the case keeps a float32 output of
      // its own).
      {"fuzz_s1_82_bf16_rows_writing_float32", bf16, {{{83, 36, 128, 8}}},
       "    t0 = torch.group_norm(x0, 1, None, None, 1e-05, True)\n"
       "    f = x0.float() * 2.0\n"
       "    return t0, torch.layer_norm(f, [36, 128, 8]), f\n"},
      // A reduced row of one element scanned along the dim it was reduced over: the scan stays
      // out of the reduction's group (an internal error before).
      {"fuzz_s37_2005_f32_scan_of_reduced_row", f32, {{{100}}, {{1}, L::Offset}, {{1}}},
       "    t3 = x2.mean(-1, keepdim=True)\n"
       "    return torch.cumsum(t3, 0)\n"},
      // A column max over a size-1 dim without keepdim, mixed with an element value of the
      // reduced shape that joined the group after the node mixing it (an internal error before).
      {"fuzz_s38_373_bf16_reduced_row_mixed_with_late_element", bf16, {{{1, 3, 17}}, {{1, 3, 17}}, {{3, 17}}},
       "    t4 = torch.max(x1, -3)[0] - torch.max(x1, -3)[1].to(x1.dtype)\n"
       "    return torch.where(x2 > 0.0, t4, 0.0)\n"},
      // A column group cut at its reductions (16-bit element inputs past a quarter of twice
      // L2) whose epilogue reads a comparison of another group's column values, of neither
      // shape of its own: the column group kept it and wrote it over its domain (an internal
      // error; fuzz seed 42, program 479, under column_cut_kb=1). It goes with the epilogue now.
      {"fuzz_s42_479_bf16_cut_epilogue_reading_other_columns", bf16, {{{2560, 255, 31}}, {{2560, 255, 31}, L::Sliced}},
       "    t2 = x1.amax(-2, keepdim=True)\n"
       "    t3 = torch.logsumexp(x0, -3, keepdim=True)\n"
       "    return torch.where(t3 > 0.1, t3, t2)\n"},
      // Attention over a query of one row a head, transposed from [.., 1000, 1]: its row stride
      // of 1 reached ATen's memory-efficient kernel, which refused it ("query is not correctly
      // aligned (strideM)"; fuzz seed 41, program 290). Size-1 dims are restrided first now.
      {"fuzz_s41_290_f32_attention_over_one_transposed_row", f32, {{{255, 7, 1, 1000}, L::Transposed}, {{1, 1, 1, 1000}}},
       "    t0 = torch.matmul(torch.softmax((torch.matmul(x0 * 0.25, torch.tanh(x0).transpose(-2, -1))).masked_fill("
       "(x0.amin(-1) + x0.amax(-1)).unsqueeze(-2) <= 0.0, float('-inf')), -1), torch.sigmoid(x0))\n"
       "    return t0\n"},
      // A full reduction's group joined argmin's element values before argmin's own min, which
      // they read at full size: the group needed a second pass the full schedule does not take
      // (an internal error; fuzz seed 45, program 382). The min now stays out, with the reason.
      {"fuzz_s45_382_f32_full_reduction_joined_by_argmin", f32, {{{3, 0, 4097}}, {{3, 1, 1}}},
       "    t0 = x1.mean(0, keepdim=True)\n"
       "    t1 = torch.argmin(x1, -3).to(x1.dtype)\n"
       "    return torch.where(t0 > 0.0, t1, 0.0)\n"},
      // A row group's where() of two row values ([7, 1]) and a column group's variance ([7]) on a
      // square domain: the [7] input looked like a squeezed row value, so the where's [7, 7]
      // output was planned as one value a row (an internal error: "would write output as [7]";
      // CPU fuzz seed 52, program 1050). The output is per element, the [7] input per column.
      {"fuzz_s52_1050_bf16_row_values_broadcast_with_a_column_value", bf16, {{{7, 7}}},
       "    t0 = torch.fmod(x0 * x0, 0.75)\n"
       "    t1 = t0.var(0, keepdim=False)\n"
       "    t2 = t0.sum(-1, keepdim=True)\n"
       "    t4 = t2 - t2\n"
       "    return (torch.where(t4 > 0.1, t4, t1), t2)\n"},
      // The same where() feeding a row sum instead of an output (written beside fuzz seed 52,
      // program 1050): the old analysis took it for a row node too, with no output shape to
      // check it against.
      {"fuzz_s52_1050_f32_broadcast_where_feeding_a_row_sum", f32, {{{7, 7}}},
       "    t1 = x0.var(0, keepdim=False)\n"
       "    t2 = x0.sum(-1, keepdim=True)\n"
       "    return (torch.where(t2 > 0.1, t2, t1) * x0).sum(-1)\n"},
      // Masked attention over an empty batch: ATen's fused kernel returned an undefined tensor,
      // and the op after the call failed on it (GPU fuzz seed 48). Empty operands run the math.
      {"fuzz_s48_bf16_attention_over_an_empty_batch", bf16, {{{0, 2, 17, 256}}},
       "    t0 = torch.matmul(torch.softmax((torch.matmul(x0 * 0.25, torch.tanh(x0).transpose(-2, -1))).masked_fill("
       "(x0.amin(-1) + x0.amax(-1)).unsqueeze(-2) <= 0.0, float('-inf')), -1, dtype=6).to(x0.dtype), torch.sigmoid(x0))\n"
       "    return x0 * t0\n"},
  };
}

}  // namespace tftest
