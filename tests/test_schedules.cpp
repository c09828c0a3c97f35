// Schedule choices on the CPU side: the tuning knobs and their parsing, which values a cached
// row schedule keeps, unrolled loads in pointwise, column and full kernels, and every suite
// kernel through NVRTC under each choice.
#include "codegen/device_target.h"
#include "codegen/reduction_layout.h"
#include "codegen/tuning.h"
#include "runtime/process_tuning.h"
#include "tests/suite_modules.h"
#include "tests/test_util.h"

using tftest::module_from;
using tftest::module_returning;

namespace {

namespace cg = torchfuse::codegen;

// The one kernel's source, its name (tf_<pattern>_<hash>) written "tf_K" so that expectations
// do not change with every change of the source.
std::string kernel_source(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, false);
  EXPECT_EQ(e.kernels.size(), 1u);
  return e.kernels.empty() ? "" : tftest::replace_all(e.kernels[0].source, e.kernels[0].name, "tf_K");
}

// The same, after NVRTC compiled it (a cubin of some size).
std::string compiled(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, /*compile_kernels=*/true);
  EXPECT_EQ(e.cubin_bytes.size(), 1u);
  EXPECT_GT(e.cubin_bytes.at(0), 0u);
  return tftest::replace_all(e.kernels.at(0).source, e.kernels.at(0).name, "tf_K");
}

// The kernel itself, without the prelude.
std::string body(const std::string& src) { return src.substr(src.find("extern \"C\"")); }
// A kernel body's team reductions: warp, block (with shared rounds, each reduction's collect) and cluster.
int team_reductions(const std::string& body) {
  return tftest::count_occurrences(body, "_reduce<") + tftest::count_occurrences(body, "tf_block_collect<");
}

// Most plans here are for rows enough to fill a device, drawn from a few rows: without the
// few-rows widening (row_fill=0), which FewRows.* tests.
cg::Tuning many_rows() {
  cg::Tuning t = cg::parse_tuning("");
  t.row_fill = 0;
  return t;
}
cg::Tuning with(const std::string& spec) { return cg::parse_tuning(spec, many_rows(), "test"); }

TEST(Tuning, DefaultsAndOverrides) {
  const cg::Tuning d = cg::parse_tuning("");
  EXPECT_EQ(d.pointwise_unroll, 1);
  EXPECT_EQ(d.column_unroll, 8);
  EXPECT_EQ(d.column_blocks, 2);
  EXPECT_EQ(d.column_rows, 16);
  EXPECT_EQ(d.column_float_sums, 0);
  EXPECT_EQ(d.column_tile_threads, 16);
  EXPECT_EQ(d.full_unroll, 0);
  EXPECT_EQ(d.pointwise_waves, 0);
  EXPECT_EQ(d.row_waves, 0);
  EXPECT_EQ(d.row_cache, cg::RowCachePolicy::Auto);
  EXPECT_EQ(d.row_vectors, 4);
  EXPECT_EQ(d.row_rounds, 0);
  EXPECT_EQ(d.row_min_blocks, 0);
  EXPECT_EQ(d.fast_math, 1);
  EXPECT_EQ(d.row_prefetch, -1);
  EXPECT_EQ(d.cache_hints, -1);
  EXPECT_EQ(d.row_hold, -1);
  EXPECT_EQ(d.shared_hold, -1);
  EXPECT_EQ(d.row_stage, -1);
  EXPECT_EQ(d.looped_unroll, 0);
  EXPECT_EQ(d.row_cache_registers, 0);
  EXPECT_EQ(d.pointwise_tile, 64);
  EXPECT_EQ(d.column_cache, 64);
  EXPECT_EQ(d.column_pass_blocks, 4);
  EXPECT_EQ(d.column_pass_unroll, 12);
  EXPECT_EQ(d.column_pass_vectors, 0);
  EXPECT_EQ(d.column_pass_vector_unroll, 4);
  EXPECT_EQ(d.column_pass_wave_kb, 0);
  EXPECT_EQ(d.column_pass_wave_hints, 1);
  const cg::Tuning t = cg::parse_tuning(
      "pointwise_unroll=4,row_cache=values,column_unroll=1,full_unroll=8,row_rounds=3,row_min_blocks=16,fast_math=0,"
      "cache_hints=0,looped_unroll=4,row_cache_registers=32,shared_hold=1,column_blocks=3,pointwise_tile=16,column_cache=0,"
      "column_pass_blocks=2,column_pass_unroll=16,column_pass_vectors=1,column_pass_vector_unroll=8,"
      "column_pass_wave_kb=4096,column_pass_wave_hints=0");
  EXPECT_EQ(t.pointwise_unroll, 4);
  EXPECT_EQ(t.row_cache, cg::RowCachePolicy::Values);
  EXPECT_EQ(t.column_unroll, 1);
  EXPECT_EQ(t.full_unroll, 8);
  EXPECT_EQ(t.row_rounds, 3);
  EXPECT_EQ(t.row_min_blocks, 16);
  EXPECT_EQ(t.fast_math, 0);
  EXPECT_EQ(t.cache_hints, 0);
  EXPECT_EQ(t.looped_unroll, 4);
  EXPECT_EQ(t.row_cache_registers, 32);
  EXPECT_EQ(t.shared_hold, 1);
  EXPECT_EQ(t.column_blocks, 3);
  EXPECT_EQ(t.pointwise_tile, 16);
  EXPECT_EQ(t.column_cache, 0);
  EXPECT_EQ(t.column_pass_blocks, 2);
  EXPECT_EQ(t.column_pass_unroll, 16);
  EXPECT_EQ(t.column_pass_vectors, 1);
  EXPECT_EQ(t.column_pass_vector_unroll, 8);
  EXPECT_EQ(t.column_pass_wave_kb, 4096);
  EXPECT_EQ(t.column_pass_wave_hints, 0);
}

TEST(Tuning, MalformedOverridesNameTheProblem) {
  auto message = [](const std::string& spec) {
    try {
      cg::parse_tuning(spec);
    } catch (const torchfuse::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("pointwise_unrol=2").find("unknown knob 'pointwise_unrol'"), std::string::npos);
  EXPECT_NE(message("pointwise_unroll=0").find("must be in [1, 8]"), std::string::npos);
  EXPECT_NE(message("column_unroll=two").find("is not an integer"), std::string::npos);
  EXPECT_NE(message("row_cache=some").find("values, inputs, first or auto"), std::string::npos);
  EXPECT_NE(message("full_unroll").find("not name=value"), std::string::npos);
  EXPECT_NE(message("fast_math=2").find("must be in [0, 1]"), std::string::npos);
  EXPECT_NE(message("cache_hints=2").find("must be in [-1, 1]"), std::string::npos);
  EXPECT_NE(message("row_hold=2").find("must be in [-1, 1]"), std::string::npos);
  EXPECT_NE(message("shared_hold=-2").find("must be in [-1, 1]"), std::string::npos);
  EXPECT_NE(message("row_stage=5").find("must be in [-1, 4]"), std::string::npos);
  EXPECT_NE(message("looped_unroll=9").find("must be in [0, 8]"), std::string::npos);
  EXPECT_NE(message("column_blocks=5").find("must be in [1, 4]"), std::string::npos);
  EXPECT_NE(message("column_rows=12").find("is not one of 8, 16, 32"), std::string::npos);
  EXPECT_NE(message("column_tile_threads=4").find("must be in [8, 32]"), std::string::npos);
  EXPECT_NE(message("row_cache_registers=129").find("must be in [0, 128]"), std::string::npos);
  EXPECT_NE(message("pointwise_tile=48").find("pointwise_tile=48 is not one of 0, 16, 32, 64"), std::string::npos);
  EXPECT_NE(message("column_cache=200").find("must be in [0, 128]"), std::string::npos);
}

TEST(RowCache, Bf16SoftmaxKeepsItsInputPackedAndRecomputesExp) {
  // Three-pass softmax (online_softmax=0): x and exp(x - max) are both read again: 8 bytes per
  // element as floats, 2 keeping bf16 x as loaded. In f32 keeping x would save half, at the
  // price of computing exp twice: values win. (Registers: rows not staged in shared memory.)
  torchfuse::runtime::ScopedTuning three(with("online_softmax=0,row_stage=0"));
  const auto m = module_from(tftest::with_row_length(tftest::suite_pattern("softmax_manual").source, 4096));
  std::string src = kernel_source(m, {torch::randn({8, 4096}).to(c10::kBFloat16)});
  EXPECT_NE(src.find("inputs kept as loaded"), std::string::npos) << src;
  EXPECT_NE(src.find("kept0[k] = tf_load_keep(reinterpret_cast"), std::string::npos) << src;  // evict-last: held
  EXPECT_EQ(src.find("float cache"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 2) << src;  // in the sum pass and the output pass

  // f32 keeps the first pass's values (x) and computes exp in both later passes.
  src = kernel_source(m, {torch::randn({8, 4096})});
  EXPECT_EQ(src.find("inputs kept as loaded"), std::string::npos) << src;
  EXPECT_NE(src.find("first-pass values kept"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "float cache"), 1) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 2) << src;

  torchfuse::runtime::ScopedTuning values(with("online_softmax=0,row_cache=values"));
  src = kernel_source(m, {torch::randn({8, 4096})});
  EXPECT_EQ(tftest::count_occurrences(src, "float cache"), 2) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 1) << src;

  torchfuse::runtime::ScopedTuning inputs(with("online_softmax=0,row_cache=inputs"));
  src = kernel_source(m, {torch::randn({8, 4096})});
  EXPECT_NE(src.find("inputs kept as loaded"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 2) << src;
}

TEST(RowCache, OnlineSoftmaxKeepsOnlyX) {
  // With the sum accumulated beside the max, only x is read again (by the output pass). bf16
  // keeps it as loaded and folds each vector into the running pair as it converts it; f32 keeps
  // it as the first pass's values and adds the exps from them after the pass.
  const auto m = module_from(tftest::with_row_length(tftest::suite_pattern("softmax_manual").source, 4096));
  std::string src = kernel_source(m, {torch::randn({8, 4096}).to(c10::kBFloat16)});
  EXPECT_NE(src.find("inputs kept as loaded"), std::string::npos) << src;
  EXPECT_TRUE(tftest::contains_in_order(body(src), {"float ol1[8];", "ol1[lane] = ", "tf_online_add(acc1, ol1);"})) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 1) << src;  // the output pass
  src = kernel_source(m, {torch::randn({8, 4096})});
  EXPECT_NE(src.find("first-pass values kept"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "float cache"), 1) << src;
  EXPECT_TRUE(tftest::contains_in_order(body(src), {"acc1.m = tf_maximum(acc1.m, x0);", "tf_block_collect"})) << src;
  EXPECT_EQ(body(src).find("ol1"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 2) << src;  // after the pass, the output pass
}

TEST(FastExp, OnlyAfterSubtractingTheMaxOfTheSameValues) {
  // exp(x - max(x)) <= 1: ex2.approx (three-pass f32 softmax computes it in the sum pass and
  // again in the output pass; online sums call it inside tf_online_add); exp of anything else
  // keeps expf.
  const std::vector<c10::IValue> x = {torch::randn({8, 256})};
  {
    torchfuse::runtime::ScopedTuning three(with("online_softmax=0"));
    const std::string softmax = body(kernel_source(module_returning("x", "torch.softmax(x, -1)"), x));
    EXPECT_EQ(tftest::count_occurrences(softmax, "tf_exp_shifted("), 2) << softmax;
    EXPECT_EQ(softmax.find("expf("), std::string::npos) << softmax;
    EXPECT_EQ(tftest::count_occurrences(body(kernel_source(module_returning("x", "torch.logsumexp(x, -1)"), x)), "tf_exp_shifted("), 1);
  }
  const std::string softmax = body(kernel_source(module_returning("x", "torch.softmax(x, -1)"), x));
  EXPECT_EQ(tftest::count_occurrences(softmax, "tf_exp_shifted("), 2) << softmax;  // the online sum's, the output's
  EXPECT_EQ(softmax.find("expf("), std::string::npos) << softmax;
  const std::string other = body(kernel_source(module_returning("x", "torch.exp(x - x.amax(-1, keepdim=True) + 1.0).sum(-1)"), x));
  EXPECT_EQ(other.find("tf_exp_shifted("), std::string::npos) << other;
  EXPECT_NE(other.find("expf("), std::string::npos) << other;
  const std::string y = body(kernel_source(module_returning("x, y", "torch.exp(y - x.amax(-1, keepdim=True)).sum(-1)"),
                                           {torch::randn({8, 256}), torch::randn({8, 256})}));
  EXPECT_EQ(y.find("tf_exp_shifted("), std::string::npos) << y;
}

TEST(RowDivision, OneReciprocalPerRowThenMultiplies) {
  const std::string src = body(kernel_source(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({8, 256})}));
  EXPECT_TRUE(tftest::contains_in_order(src, {"const float rcp0 = fabsf(red", "? 1.0f / red", ": 0.0f;",
                                              "(rcp0 != 0.0f ? ", " * rcp0 : ", " / red"}))
      << src;
  // Division by an element value stays a division.
  const std::string elementwise = body(kernel_source(module_returning("x, y", "(x / y).sum(-1)"),
                                                     {torch::randn({8, 256}), torch::randn({8, 256})}));
  EXPECT_EQ(elementwise.find("rcp"), std::string::npos) << elementwise;
}

TEST(RowCache, FirstPassRowsOf128Threads) {
  torchfuse::runtime::ScopedTuning many(with(""));
  // f32 rows keep only the first pass's values: for layer norm x, not x - mean as well; 128
  // threads per row with up to 8 vectors each.
  const auto m = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  auto in = [](int64_t cols) {
    return std::vector<c10::IValue>{torch::randn({4, cols}), torch::randn({cols}), torch::randn({cols})};
  };
  std::string src = kernel_source(m, in(4096));
  EXPECT_TRUE(tftest::contains_in_order(src, {"128 threads per row", "first-pass values kept", "float cache0[32];"})) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "float cache"), 1) << src;
  // Rows of 1024 take 2 vectors per thread; rows of 8192 take 256 threads of 8 vectors.
  const auto m1024 = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 1024));
  src = kernel_source(m1024, in(1024));
  EXPECT_TRUE(tftest::contains_in_order(src, {"cached mode: 128 threads per row", "2 vectors per thread"})) << src;
  const auto m8192 = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 8192));
  src = kernel_source(m8192, in(8192));
  EXPECT_TRUE(tftest::contains_in_order(src, {"cached mode: 256 threads per row", "8 vectors per thread"})) << src;
  // row_team=0 plans first-pass rows from row_vectors like the others.
  {
    torchfuse::runtime::ScopedTuning team(with("row_team=0"));
    src = kernel_source(m, in(4096));
    EXPECT_TRUE(tftest::contains_in_order(src, {"cached mode: 256 threads per row", "4 vectors per thread"})) << src;
  }
  // row_min_blocks asks for registers that fit that many blocks.
  EXPECT_NE(kernel_source(m, in(4096)).find("__launch_bounds__(128) "), std::string::npos);
  torchfuse::runtime::ScopedTuning min_blocks(with("row_min_blocks=12"));
  src = kernel_source(m, in(4096));
  EXPECT_NE(src.find("__launch_bounds__(128, 12) "), std::string::npos) << src;
}

// Block-wide teams over 16-bit rows of at most 2 KB (bf16 attention softmax) prefetch the row they
// take next into L2 and take 4 rows per block; rows of 4096 and f32 rows do not; row_prefetch=0/1
// overrides.
TEST(RowCache, ShortSixteenBitRowsPrefetchTheirNextRow) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto attn = module_from(tftest::suite_pattern("attn_softmax_mask").source);
  auto attn_in = [](c10::ScalarType t) {
    return std::vector<c10::IValue>{torch::randn({2, 2, 8, 1024}).to(t), torch::randn({1, 1, 8, 1024}).to(t)};
  };
  const std::string prefetch = "tf_prefetch_l2(in0 + nro0, (unsigned)p.cols * 2u);";
  std::string src = kernel_source(attn, attn_in(c10::kBFloat16));
  EXPECT_TRUE(tftest::contains_in_order(src, {"each block takes 4 row team(s) in turn, prefetching the next one's row",
                                              "L2 prefetch of the row this team takes next", prefetch}))
      << src;
  src = kernel_source(attn, attn_in(c10::kFloat));
  EXPECT_NE(src.find("each block takes 1 row team(s) in turn\n"), std::string::npos) << src;
  EXPECT_EQ(body(src).find("tf_prefetch_l2("), std::string::npos);
  // bf16 rows of 4096 read more than once (kept in registers, not staged in shared memory): two
  // rows per block, no prefetch; read once: one.
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  const std::vector<c10::IValue> rows4096{torch::randn({4, 4096}).to(c10::kBFloat16)};
  {
    torchfuse::runtime::ScopedTuning registers(with("row_stage=0"));
    src = kernel_source(softmax, rows4096);
    EXPECT_NE(src.find("each block takes 2 row team(s) in turn\n"), std::string::npos) << src;
    EXPECT_EQ(body(src).find("tf_prefetch_l2("), std::string::npos);
  }
  src = kernel_source(module_returning("x", "torch.logsumexp(x, -1)"), rows4096);
  EXPECT_NE(src.find("each block takes 1 row team(s) in turn\n"), std::string::npos) << src;
  {
    torchfuse::runtime::ScopedTuning off(with("row_prefetch=0"));
    EXPECT_EQ(body(kernel_source(attn, attn_in(c10::kBFloat16))).find("tf_prefetch_l2("), std::string::npos);
  }
  torchfuse::runtime::ScopedTuning on(with("row_prefetch=1,row_stage=0"));
  src = body(kernel_source(softmax, rows4096));
  EXPECT_NE(src.find(prefetch), std::string::npos) << src;
}

TEST(RowCache, AddLayerNormKeepsValuesInF32AndInputsInBf16) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto m = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 4096));
  auto in = [](c10::ScalarType t) {
    return std::vector<c10::IValue>{torch::randn({4, 4096}).to(t), torch::randn({4, 4096}).to(t),
                                    torch::randn({4096}).to(t), torch::randn({4096}).to(t)};
  };
  EXPECT_EQ(kernel_source(m, in(c10::kFloat)).find("inputs kept as loaded"), std::string::npos);
  EXPECT_NE(kernel_source(m, in(c10::kBFloat16)).find("inputs kept as loaded"), std::string::npos);
  torchfuse::runtime::ScopedTuning values(with("row_cache=values"));
  EXPECT_EQ(kernel_source(m, in(c10::kBFloat16)).find("inputs kept as loaded"), std::string::npos);
}

TEST(RowCache, Bf16KeepsValuesWhereRecomputingExpIsNotWorthIt) {
  // Three-pass softmax: on rows of 1024 the values of the masked softmax fit in 32 registers per
  // thread, and keeping only s and mask would compute exp twice.
  torchfuse::runtime::ScopedTuning three(with("online_softmax=0"));
  const auto m = module_from(tftest::suite_pattern("attn_softmax_mask").source);
  const std::vector<c10::IValue> in = {torch::randn({2, 2, 8, 1024}).to(c10::kBFloat16),
                                       torch::randn({1, 1, 8, 1024}).to(c10::kBFloat16)};
  const std::string src = kernel_source(m, in);
  EXPECT_EQ(src.find("inputs kept as loaded"), std::string::npos);
  // Both kept values (s * 0.125 + mask and its exp), declared in group order and named by their
  // number in the group (never pointer order or IR ids: the source names the kernel and keys the cache).
  EXPECT_TRUE(tftest::contains_in_order(src, {"float cache3[", "float cache6["})) << src;
  // logsumexp keeps x either way: as loaded it takes half the registers and recomputes nothing.
  const auto lse_module = module_from(tftest::suite_pattern("logsumexp_rows").source);
  const std::string lse = kernel_source(lse_module, {torch::randn({8, 1024}).to(c10::kBFloat16)});
  EXPECT_NE(lse.find("inputs kept as loaded"), std::string::npos) << lse;
  // Online (on rows this short only when asked), logsumexp takes one pass and keeps nothing.
  torchfuse::runtime::ScopedTuning online(with("online_min_row=1024"));
  const std::string one = kernel_source(lse_module, {torch::randn({8, 1024}).to(c10::kBFloat16)});
  EXPECT_TRUE(tftest::contains_in_order(one, {"1 pass(es)", "tf_online_add("})) << one;
  EXPECT_EQ(body(one).find("kept"), std::string::npos) << one;
}

TEST(ChunkSums, LoopedRowsAddEachVectorInFloatFirst) {
  torchfuse::runtime::ScopedTuning no_cluster(with("row_cluster=1"));  // looped rows, not a cluster per row
  const auto m = module_returning("x", "x / x.sum(-1, keepdim=True)");
  const std::string full = kernel_source(m, {torch::randn({2, 65536})});
  EXPECT_NE(full.find("looped mode"), std::string::npos) << full;
  const std::string src = body(full);
  EXPECT_TRUE(tftest::contains_in_order(src, {"float chunk_acc0 = 0.0f;", "chunk_acc0 += ", "acc0 += (double)chunk_acc0;"}))
      << src;
  // Online softmax sums add in float pairs (no double accumulator to chunk for).
  const std::string softmax = body(kernel_source(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({2, 65536})}));
  EXPECT_EQ(softmax.find("chunk_acc"), std::string::npos) << softmax;
  torchfuse::runtime::ScopedTuning off(with("row_cluster=1,chunk_sums=0"));
  const std::string plain = body(kernel_source(m, {torch::randn({2, 65536})}));
  EXPECT_EQ(plain.find("chunk_acc"), std::string::npos) << plain;
}

TEST(ChunkSums, SixteenBitFullSumsAddVectorsInFloatFirst) {
  // Sums of 16-bit values with an f32 result add each vector in float before the double sum.
  const auto col = module_returning("x", "x.float().sum(0)");
  const auto full = module_returning("x", "(x.float() * x.float()).mean()");
  for (auto t : {c10::kBFloat16, c10::kHalf}) {
    // Columns add each element in double (chunks measured slower there).
    EXPECT_EQ(body(kernel_source(col, {torch::randn({4096, 512}).to(t)})).find("chunk_acc"), std::string::npos);
    const std::string f = body(kernel_source(full, {torch::randn({4096, 512}).to(t)}));
    EXPECT_TRUE(tftest::contains_in_order(f, {"float chunk_acc0 = 0.0f;", "chunk_acc0 += ", "acc0 += (double)chunk_acc0;"})) << f;
  }
  // f32 inputs keep a double add per element.
  EXPECT_EQ(body(kernel_source(col, {torch::randn({4096, 512})})).find("chunk_acc"), std::string::npos);
  EXPECT_EQ(body(kernel_source(full, {torch::randn({4096, 512})})).find("chunk_acc"), std::string::npos);
}

TEST(WideSums, SixteenBitResultsAccumulateInFloat) {
  // A bf16 or fp16 sum keeps 8 or 11 bits: float accumulators (as eager's), f32 sums double.
  for (const char* e : {"x.sum(0)", "(x * x).mean()"}) {
    const auto m = module_returning("x", e);
    for (auto t : {c10::kBFloat16, c10::kHalf}) {
      const std::string src = body(kernel_source(m, {torch::randn({4096, 512}).to(t)}));
      EXPECT_EQ(src.find("double acc"), std::string::npos) << e << "\n" << src;
      EXPECT_NE(src.find("float acc"), std::string::npos) << e << "\n" << src;
    }
    EXPECT_NE(body(kernel_source(m, {torch::randn({4096, 512})})).find("double acc"), std::string::npos) << e;
  }
}

// Looped rows with one block per multiprocessor (rows too long for two to keep their re-reads in
// L2) load two vectors per thread ahead per step when they stream one input of their own (the
// weights of layer norm aside); two blocks per multiprocessor (bf16 rows of 65536) and two such
// inputs (add + layer norm) load one at a time;
// looped_unroll sets it anywhere. Every kernel compiles through NVRTC.
TEST(LoopedRows, LoadAheadWithOneBlockPerMultiprocessor) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 262144));
  const auto bf16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  const std::string ahead = compiled(softmax, {bf16({2, 262144})});
  EXPECT_TRUE(tftest::contains_in_order(body(ahead), {"jb += 8192 * 2)", "tf_vec<tf_bf16, 8> ahead0[2];",
                                                      "ahead0[u] = tf_load_keep(", "const tf_vec<tf_bf16, 8> v0 = ahead0[u];",
                                                      "tf_online_add(", "jb += 8192 * 2)", "ahead0[u] = tf_load_once("}))
      << ahead;
  {
    torchfuse::runtime::ScopedTuning no_ring(with("row_ring=0"));
    EXPECT_EQ(body(compiled(softmax, {bf16({2, 65536})})).find("ahead"), std::string::npos);
  }
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 262144));
  const std::string weights = compiled(ln, {bf16({2, 262144}), bf16({262144}), bf16({262144})});
  EXPECT_TRUE(tftest::contains_in_order(body(weights), {"ahead0[u] = ", "ahead1[u] = "})) << weights;
  // A row too long for registers but staged in shared memory (bf16 32768) is no looped row.
  const auto ln32k = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 32768));
  const std::string staged = compiled(ln32k, {bf16({2, 32768}), bf16({32768}), bf16({32768})});
  EXPECT_NE(staged.find("tf_bulk_load("), std::string::npos) << staged;
  EXPECT_EQ(body(staged).find("ahead"), std::string::npos) << staged;
  const std::string two_inputs = compiled(add_ln, {bf16({2, 262144}), bf16({2, 262144}), bf16({262144}), bf16({262144})});
  EXPECT_NE(two_inputs.find("looped mode"), std::string::npos) << two_inputs;
  EXPECT_EQ(body(two_inputs).find("ahead"), std::string::npos) << two_inputs;
  torchfuse::runtime::ScopedTuning three(with("looped_unroll=3,row_ring=0"));
  const std::string forced = compiled(softmax, {bf16({2, 65536})});
  EXPECT_TRUE(tftest::contains_in_order(body(forced), {"jb += 8192 * 3)", "ahead0[3];"})) << forced;
}

TEST(RowCluster, LongRowsShareAClusterOnSm90) {
  // Rows of 65536 f32 do not fit one block's registers: on sm_90 a cluster of 4 blocks of 512
  // threads keeps the row (8 vectors per thread) and reduces through distributed shared memory.
  const auto m = module_returning("x", "torch.softmax(x, -1)");
  const std::vector<c10::IValue> in = {torch::randn({2, 65536})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, /*compile_kernels=*/true);
  ASSERT_EQ(e.kernels.size(), 1u);
  const std::string& src = e.kernels[0].source;
  EXPECT_TRUE(tftest::contains_in_order(src, {"cached mode: 2048 threads per row (a cluster of 4 blocks), block 512",
                                              "8 vectors per thread", "const int tl = (int)tf_cluster_rank() * 512 + (int)threadIdx.x;",
                                              "__shared__ tf_max_sum slot_acc1;",
                                              "row0 = (tf_index)(blockIdx.x / 4)", "(tf_index)k * 2048 + tl",
                                              "tf_cluster_reduce<16, 4>(acc1, tf_max_sum_op(), smem_acc1, &slot_acc1)"}))
      << src;
  ASSERT_EQ(e.cubin_bytes.size(), 1u);
  EXPECT_GT(e.cubin_bytes[0], 0u);
  // bf16 rows keep values or packed inputs, and loop (a cluster measured slower for them).
  EXPECT_NE(kernel_source(m, {torch::randn({2, 65536}).to(c10::kBFloat16)}).find("looped mode"), std::string::npos);
  // Without clusters (older GPUs, or row_cluster=1) the row loops over global memory.
  auto o = tftest::quiet_options();
  o.offline_arch = "sm_80";
  EXPECT_NE(torchfuse::compile(m, o).explain(in).kernels[0].source.find("looped mode"), std::string::npos);
  torchfuse::runtime::ScopedTuning off(with("row_cluster=1"));
  EXPECT_NE(kernel_source(m, in).find("looped mode"), std::string::npos);
}

// Staged rows (row_stage, sm_90): the inputs read again come into shared memory by bulk copies,
// with a ring of buffers the next rows' copies issued before this row's wait; every pass reads
// them there, the weights stay global loads (with the first pass's: these 4 rows are few). Rows too long for shared memory, unvectorized rows and sm_80 are not staged.
TEST(RowStaging, RowsReadAgainComeThroughSharedMemory) {
  torchfuse::runtime::ScopedTuning stage(with("row_stage=2"));
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  const std::vector<c10::IValue> ln_in{torch::randn({4, 4096}), torch::randn({4096}), torch::randn({4096})};
  std::string src = kernel_source(ln, ln_in);
  EXPECT_TRUE(tftest::contains_in_order(
      src, {"staged: the inputs read again", "2 buffer(s)", "tf_mbar_expect_bytes(bar, (unsigned)teams * team_bytes);",
            "tf_bulk_load_keep(buf + (unsigned)t * team_bytes + (unsigned)p.cols * 0u, p.in0 + sro0, (unsigned)p.cols * 4u, bar);",
            "tf_mbar_init(&stage_bar[1]);", "__syncthreads();", "for (int s = 0; s < 1; ++s)",
            "tf_K_stage(p, ahead, stage_smem + (unsigned)s * stage_block_bytes, &stage_bar[s]);",
            "const unsigned stage_buf = stage_it % 2u;", "const unsigned stage_next = (stage_it + 1u) % 2u;",
            "const tf_index stage_row = row0 + (tf_index)1 * (tf_index)gridDim.x * 1;",
            "tf_K_stage(p, stage_row, stage_smem + stage_next * stage_block_bytes, &stage_bar[stage_next]);",
            "tf_mbar_wait(&stage_bar[stage_buf], (stage_it / 2u) & 1u);",
            "*reinterpret_cast<const tf_vec<float, 4>*>(stage0 + j0);",
            "early1[k] = *reinterpret_cast<const tf_vec<float, 4>*>(in1 + ro1 + j0);", "tf_block_collect",
            "*reinterpret_cast<const tf_vec<float, 4>*>(stage0 + j0);", "tf_block_collect",
            "*reinterpret_cast<const tf_vec<float, 4>*>(stage0 + j0);", "const tf_vec<float, 4> v1 = early1[k];",
            "__syncthreads();  // this row group's buffer is free again", "++stage_it;"}))
      << src;
  EXPECT_EQ(body(src).find("in0 + ro0"), std::string::npos) << src;  // x never comes from global memory in a pass
  // Two staged inputs (x and r), one after the other in each team's row; bf16 rows of 4096.
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 4096));
  auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  src = kernel_source(add_ln, {b16({4, 4096}), b16({4, 4096}), b16({4096}), b16({4096})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"const unsigned team_bytes = (unsigned)p.cols * 4u;",
                                              "p.in0 + sro0, (unsigned)p.cols * 2u, bar);",
                                              "(unsigned)p.cols * 2u, p.in1 + sro1, (unsigned)p.cols * 2u, bar);",
                                              "stage1 = reinterpret_cast<const tf_bf16*>(stage_team + (unsigned)p.cols * 2u);"}))
      << src;
  // bf16 rows of 65536 (128 KB): one buffer, each row group loaded when the block takes it.
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  src = kernel_source(softmax, {b16({4, 65536})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"1024 threads per row", "1 buffer(s)", "const tf_index stage_row = row0 + (tf_index)0 *",
                                              "tf_mbar_wait(&stage_bar[stage_buf], (stage_it / 1u) & 1u);",
                                              "__syncthreads();  // this row group's buffer is free again"}))
      << src;
  EXPECT_EQ(src.find("tf_mbar_init(&stage_bar[1])"), std::string::npos) << src;
  // An attention mask broadcast over the batch serves many rows: it stays a global load (asking
  // L2 to keep it).
  const auto attn = module_from(tftest::with_row_length(tftest::suite_pattern("attn_softmax_mask").source, 1024));
  src = kernel_source(attn, {b16({2, 2, 8, 1024}), b16({1, 1, 8, 1024})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"const unsigned team_bytes = (unsigned)p.cols * 2u;", "p.in0 + sro0",
                                              "*reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);",
                                              "tf_load_shared(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + ro1 + j0));"}))
      << src;
  EXPECT_EQ(src.find("p.in1 + sro1"), std::string::npos) << src;
  // Three buffers where asked for and they fit.
  {
    torchfuse::runtime::ScopedTuning three(with("row_stage=3"));
    EXPECT_TRUE(tftest::contains_in_order(kernel_source(ln, ln_in), {"3 buffer(s)", "for (int s = 0; s < 2; ++s)",
                                                                     "(stage_it / 3u) & 1u"}));
  }
  // Not staged: f32 rows of 65536 (256 KB), rows that are not whole vectors, sm_80, row_stage=0.
  EXPECT_EQ(kernel_source(softmax, {torch::randn({4, 65536})}).find("(buf + (unsigned)t * team_bytes"), std::string::npos);
  EXPECT_EQ(kernel_source(softmax, {torch::randn({4, 1030})}).find("(buf + (unsigned)t * team_bytes"), std::string::npos);
  auto o = tftest::quiet_options();
  o.offline_arch = "sm_80";
  EXPECT_EQ(torchfuse::compile(ln, o).explain(ln_in).kernels.at(0).source.find("(buf + (unsigned)t * team_bytes"), std::string::npos);
  torchfuse::runtime::ScopedTuning off(with("row_stage=0"));
  EXPECT_EQ(kernel_source(ln, ln_in).find("(buf + (unsigned)t * team_bytes"), std::string::npos);
}

// Ringed rows (row_ring, sm_90): 16-bit rows too long to stage whole but within what shared
// memory holds stream the inputs read again through a ring of chunks: the first slots load before
// the row loop, each pass waits for a chunk's barrier and reads it on chip, the last pass frees
// it (after a __syncthreads) and refills it with the chunk a ring ahead. The largest chunks for
// which a row and a chunk more fit; two ringed inputs side by side in each chunk; the weights stay
// global loads. Not ringed: f32 rows by default, rows too long for shared memory, sm_80,
// row_ring=0. Every kernel compiles through NVRTC.
TEST(RowRing, LongSixteenBitRowsStreamThroughARing) {
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  std::string src = compiled(softmax, {b16({4, 65536})});
  EXPECT_TRUE(tftest::contains_in_order(
      src, {"looped mode: 1024 threads per row", "ringed: the inputs read again stream through a ring of 3 chunks of 32768 columns",
            "void tf_K_ring(const tf_K_params& p, unsigned q, unsigned chunks, unsigned char* slot, unsigned long long* bar)",
            "const tf_index row = (tf_index)blockIdx.x + (tf_index)(q / chunks) * (tf_index)gridDim.x;",
            "tf_mbar_expect_bytes(bar, n * 2u);", "tf_bulk_load_keep(slot + 0u, p.in0 + sro0 + j, n * 2u, bar);",
            "__launch_bounds__(1024)", "__shared__ __align__(8) unsigned long long ring_bar[3];", "tf_mbar_init(&ring_bar[s]);",
            "const unsigned ring_total = ring_rows * ring_chunks;",
            "tf_K_ring(p, q, ring_chunks, ring_smem + q * 65536u, &ring_bar[q]);",
            "tf_mbar_wait(&ring_bar[rq % 3u], (rq / 3u) & 1u);", "stage0 + (j0 - ring_j)", "tf_online_add(", "tf_block_collect",
            "tf_mbar_wait(&ring_bar[rq % 3u], (rq / 3u) & 1u);", "stage0 + (j0 - ring_j)", "tf_store_once(",
            "__syncthreads();  // every thread is done with this chunk",
            "if (threadIdx.x == 0 && rq + 3u < ring_total) tf_K_ring(p, rq + 3u, ring_chunks, ring_slot, &ring_bar[rq % 3u]);",
            "ring_q += ring_chunks;"}))
      << src;
  EXPECT_EQ(body(src).find("in0 + ro0"), std::string::npos) << src;  // x never comes from global memory in a pass
  EXPECT_EQ(tftest::count_occurrences(body(src), "__syncthreads();  // every thread is done"), 1) << src;  // the last pass only
  // Rows of 100000: 13 chunks of 8192 fill the ring, no chunk to spare.
  EXPECT_NE(compiled(softmax, {b16({2, 100000})}).find("a ring of 13 chunks of 8192 columns"), std::string::npos);
  // Layer norm: three passes through the ring, the weights from global memory in the last.
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 65536));
  src = body(compiled(ln, {b16({2, 65536}), b16({65536}), b16({65536})}));
  EXPECT_TRUE(tftest::contains_in_order(src, {"stage0 + (j0 - ring_j)", "tf_block_collect", "stage0 + (j0 - ring_j)", "tf_block_collect",
                                              "stage0 + (j0 - ring_j)", "*reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + ro1 + j0)",
                                              "__syncthreads();  // every thread is done"}))
      << src;
  // add + layer norm: x and r side by side in each chunk (8192 columns: 32 KB, a row and a chunk more fit).
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 40000));
  src = compiled(add_ln, {b16({2, 40000}), b16({2, 40000}), b16({40000}), b16({40000})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"a ring of 6 chunks of 8192 columns", "tf_mbar_expect_bytes(bar, n * 4u);",
                                              "tf_bulk_load_keep(slot + 0u, p.in0 + sro0 + j, n * 2u, bar);",
                                              "tf_bulk_load_keep(slot + 16384u, p.in1 + sro1 + j, n * 2u, bar);",
                                              "stage1 = reinterpret_cast<const tf_bf16*>(ring_slot + 16384u);"}))
      << src;
  // Not ringed.
  auto ringed = [&](const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
    return kernel_source(m, in).find("ringed:") != std::string::npos;
  };
  EXPECT_FALSE(ringed(softmax, {b16({2, 262144})}));
  EXPECT_FALSE(ringed(softmax, {torch::randn({2, 40000})}));
  auto o = tftest::quiet_options();
  o.offline_arch = "sm_80";
  EXPECT_EQ(torchfuse::compile(softmax, o).explain({b16({2, 65536})}).kernels.at(0).source.find("ringed:"), std::string::npos);
  {
    torchfuse::runtime::ScopedTuning off(with("row_ring=0"));
    EXPECT_FALSE(ringed(softmax, {b16({2, 65536})}));
  }
  // f32 rows where asked for (and not kept in a cluster); the vectors per chunk as asked for.
  torchfuse::runtime::ScopedTuning f32(with("row_ring=1,row_cluster=1,row_ring_vectors=1"));
  EXPECT_NE(compiled(softmax, {torch::randn({2, 40000})}).find("a ring of 13 chunks of 4096 columns"), std::string::npos);
}

// Which rows are staged by default (row_stage=-1): 16-bit rows of 2048 to 32768 elements, one
// buffer, and of 1024 and up where nothing costly is recomputed (layer norm, not softmax); not
// rows of up to 1024 that fill their register teams exactly (ExactRows.*: a layer norm over rows
// of 1024, unless row_exact=0, but rows of 1280), not f32 rows, not shorter or longer 16-bit
// rows, not where a register cache is asked for.
TEST(RowStaging, ByDefaultSixteenBitRowsOf2048To32768) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  auto staged = [&](const torch::Tensor& x) {
    const std::string src = kernel_source(softmax, {x});
    return src.find("(buf + (unsigned)t * team_bytes") != std::string::npos && src.find("1 buffer(s)") != std::string::npos;
  };
  auto b16 = [](int64_t cols) { return torch::randn({4, cols}).to(c10::kBFloat16); };
  EXPECT_TRUE(staged(b16(2048)));
  EXPECT_TRUE(staged(b16(4096)));
  EXPECT_TRUE(staged(b16(32768)));
  EXPECT_FALSE(staged(b16(1024)));
  EXPECT_FALSE(staged(b16(65536)));
  EXPECT_FALSE(staged(torch::randn({4, 4096})));
  auto ln_staged = [&](int64_t cols) {
    const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, cols));
    const auto w = torch::randn({cols}).to(c10::kBFloat16);
    return kernel_source(ln, {b16(cols), w, w}).find("tf_bulk_load_keep(buf") != std::string::npos;
  };
  EXPECT_FALSE(ln_staged(1024));
  EXPECT_TRUE(ln_staged(1280));  // 64 threads x 3 vectors of 8 cover 1536
  EXPECT_TRUE(ln_staged(4096));
  const auto attn = module_from(tftest::suite_pattern("attn_softmax_mask").source);
  EXPECT_EQ(kernel_source(attn, {torch::randn({2, 2, 8, 1024}).to(c10::kBFloat16), torch::randn({1, 1, 8, 1024}).to(c10::kBFloat16)})
                .find("tf_bulk_load_keep(buf"),
            std::string::npos);
  {
    torchfuse::runtime::ScopedTuning inexact(with("row_exact=0"));
    EXPECT_TRUE(ln_staged(1024));
  }
  torchfuse::runtime::ScopedTuning values(with("row_cache=values"));
  EXPECT_FALSE(staged(b16(4096)));
}

TEST(OnlineSoftmax, SumsAccumulateWithTheirMax) {
  torchfuse::runtime::ScopedTuning many(with(""));
  // softmax: the max and the sum of exp(x - max) in one pass (a running max, the sum rescaled as
  // it grows), the output in a second; logsumexp in one pass; each pair a single team reduction.
  const std::vector<c10::IValue> x = {torch::randn({8, 4096})};
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  std::string src = kernel_source(softmax, x);
  EXPECT_TRUE(tftest::contains_in_order(
      src, {"2 pass(es) over each row", "%3 and %6 accumulate together", "tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};",
            "acc1.m = tf_maximum(acc1.m, x0);", "acc1.s += tf_exp_shifted(cache0[k * 4 + lane] - acc1.m);",
            "tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);", "const tf_max_sum ms", " = tf_block_collect<4>(tf_max_sum_op(), smem_acc1 + red_half);",
            " = tf_online_max(ms", " = tf_online_sum(ms", ", false);"}))
      << src;
  EXPECT_EQ(body(src).find("acc0"), std::string::npos) << src;  // the max has no accumulator of its own
  EXPECT_EQ(tftest::count_occurrences(body(src), "tf_exp_shifted("), 2) << src;
  src = kernel_source(module_returning("x", "torch.logsumexp(x, -1)"), x);
  EXPECT_TRUE(tftest::contains_in_order(src, {"1 pass(es) over each row", "%12 is %3 again", "tf_online_add(acc1, ", ", true);"}))
      << src;
  // Its second max (the one without keepdim) is the first one's result: one team reduction.
  EXPECT_EQ(team_reductions(body(src)), 1) << src;
  // Shorter rows keep a pass for the sum (online_min_row), unless told otherwise.
  const auto log_softmax = module_returning("x", "torch.log_softmax(x, -1)");
  const std::vector<c10::IValue> short_rows = {torch::randn({8, 256}).to(c10::kBFloat16)};
  EXPECT_NE(kernel_source(log_softmax, short_rows).find("3 pass(es) over each row"), std::string::npos);
  {
    torchfuse::runtime::ScopedTuning short_online(with("online_min_row=256"));
    src = kernel_source(log_softmax, short_rows);
    EXPECT_TRUE(tftest::contains_in_order(src, {"2 pass(es) over each row", "tf_online_add(acc1, ", "tf_warp_reduce<"})) << src;
  }

  // Not the pattern: a shift that is not the max, or the max of other values.
  src = kernel_source(module_returning("x", "torch.exp(x - x.amax(-1, keepdim=True) + 1.0).sum(-1)"), x);
  EXPECT_EQ(body(src).find("tf_online_add("), std::string::npos) << src;
  EXPECT_NE(src.find("2 pass(es)"), std::string::npos) << src;
  src = kernel_source(module_returning("x, y", "torch.exp(y - x.amax(-1, keepdim=True)).sum(-1)"), {x[0], torch::randn({8, 4096})});
  EXPECT_EQ(body(src).find("tf_online_add("), std::string::npos) << src;

  torchfuse::runtime::ScopedTuning off(with("online_softmax=0"));
  src = kernel_source(softmax, x);
  EXPECT_NE(src.find("3 pass(es)"), std::string::npos) << src;
  EXPECT_EQ(body(src).find("tf_online_add("), std::string::npos) << src;
  src = kernel_source(module_returning("x", "torch.logsumexp(x, -1)"), x);
  EXPECT_EQ(team_reductions(body(src)), 2) << src;  // the max (once) and the sum
}

TEST(OnlineSoftmax, EveryTeamKindCompiles) {
  // Warp teams, block teams, clusters (sm_90) and looped rows, in f32 and bf16, through NVRTC.
  torchfuse::runtime::ScopedTuning any_row(with("online_min_row=1"));
  struct Case {
    std::vector<int64_t> shape;
    c10::ScalarType dtype;
    const char* schedule;
  };
  for (const auto& c : {Case{{8, 256}, c10::kFloat, "tf_warp_reduce<"}, Case{{8, 4096}, c10::kBFloat16, "tf_block_collect<"},
                        Case{{2, 65536}, c10::kFloat, "tf_cluster_reduce<"}, Case{{2, 65536}, c10::kBFloat16, "looped mode"}}) {
    for (const char* e : {"torch.softmax(x, -1)", "torch.logsumexp(x, -1)"}) {
      const std::vector<c10::IValue> in = {torch::randn(c.shape).to(c.dtype)};
      const auto ex = torchfuse::compile(module_returning("x", e), tftest::quiet_options()).explain(in, /*compile_kernels=*/true);
      ASSERT_EQ(ex.kernels.size(), 1u) << e;
      const std::string& src = ex.kernels[0].source;
      EXPECT_NE(body(src).find("tf_max_sum_op()"), std::string::npos) << src;
      if (std::string(e).find("softmax") != std::string::npos) EXPECT_NE(src.find(c.schedule), std::string::npos) << src;
      ASSERT_EQ(ex.cubin_bytes.size(), 1u);
      EXPECT_GT(ex.cubin_bytes[0], 0u) << src;
    }
  }
}

TEST(RowCache, VectorsPerThreadSetTheTeam) {
  torchfuse::runtime::ScopedTuning many(with(""));
  // Rows that keep every value (first-pass rows aim for tuning().row_team threads instead).
  const auto m = module_returning("x", "torch.softmax(x, -1)");
  torchfuse::runtime::ScopedTuning values(with("row_cache=values"));
  EXPECT_NE(kernel_source(m, {torch::randn({8, 4096})}).find("256 threads per row, block 256, vector width 4, 4 vectors"),
            std::string::npos);
  torchfuse::runtime::ScopedTuning two(with("row_cache=values,row_vectors=2"));
  EXPECT_NE(kernel_source(m, {torch::randn({8, 4096})}).find("512 threads per row, block 512, vector width 4, 2 vectors"),
            std::string::npos);
}

TEST(RowCache, UnvectorizedRowsKeepValues) {
  // Rows of odd length load element by element: nothing to keep as loaded vectors.
  const std::string src = kernel_source(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({8, 1001})});
  EXPECT_NE(src.find("cached mode"), std::string::npos) << src;
  EXPECT_EQ(src.find("inputs kept as loaded"), std::string::npos) << src;
}

TEST(Unroll, PointwiseLoadsSeveralVectorsFirst) {
  const auto m = module_returning("x, y", "torch.tanh(x) * y + 1.0");
  const std::vector<c10::IValue> in = {torch::randn({64, 256}), torch::randn({64, 256})};
  std::string src = kernel_source(m, in);
  EXPECT_NE(src.find("for (tf_index v = first; v < nvec; v += step)"), std::string::npos) << src;
  torchfuse::runtime::ScopedTuning two(with("pointwise_unroll=2"));
  src = kernel_source(m, in);
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<float, 4> v0[2];", "v0[u] = *reinterpret_cast",
                                              "v1[u] = *reinterpret_cast", "tf_K_compute(v0[u].v[lane]"}))
      << src;
  // A transposed operand is read lane by lane: no unroll.
  src = kernel_source(m, {torch::randn({256, 64}).t(), torch::randn({64, 256})});
  EXPECT_EQ(src.find("v0[u]"), std::string::npos) << src;
}

TEST(Unroll, ColumnAndFullReductionsLoadSeveralRowsFirst) {
  torchfuse::runtime::ScopedTuning t(with("column_unroll=3,full_unroll=2"));
  std::string src = kernel_source(module_returning("x", "x.sum(0)"), {torch::randn({512, 256})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<float, 4> v0[3];", "const tf_index r = rb + (tf_index)u * (tf_index)p.split * 16;",
                                              "v0[u] = *reinterpret_cast", "v0[u].v[lane]"}))
      << src;
  src = kernel_source(module_returning("x", "(x * x).mean()"), {torch::randn({512, 256})});
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<float, 4> v0[2];", "v0[u] = *reinterpret_cast", "v0[u].v[lane]"})) << src;
}

// Full reductions by default: two vectors a thread over 16-bit inputs, one over f32.
TEST(Unroll, FullReductionsUnrollSixteenBitInputs) {
  const auto m = module_returning("x", "(x * x).mean()");
  std::string src = kernel_source(m, {torch::randn({512, 256}).to(c10::kBFloat16)});
  EXPECT_NE(src.find("tf_vec<tf_bf16, 8> v0[2];"), std::string::npos) << src;
  src = kernel_source(m, {torch::randn({512, 256})});
  EXPECT_NE(src.find("tf_vec<float, 4> v0[1];"), std::string::npos) << src;
}

// Split reductions end with one thread's acquire-release count of the block's arrival (no fence
// in every thread); the last column block loads its partial rows a batch at a time, whole vectors
// of them, in as many batches as 128 bytes a thread allow (NVRTC compiles each form).
TEST(SplitCombine, OneArrivalCountAndBatchedPartialLoads) {
  struct Case {
    const char* expr;
    c10::ScalarType dtype;
    const char* batch;  // the partials one thread loads at once
  };
  for (const auto& c : {Case{"x.sum(0)", c10::kBFloat16, "float pv_acc0[4][8];"}, Case{"x.sum(0)", c10::kFloat, "double pv_acc0[4][4];"},
                        Case{"x.sum(0) + x.amax(0)", c10::kHalf, "float pv_acc1[2][8];"},
                        Case{"x.sum(0) + x.amax(0)", c10::kFloat, "float pv_acc1[2][4];"},
                        Case{"(x > 0.5).sum(0)", c10::kFloat, "long long pv_acc0[4][4];"},
                        Case{"x.int().amax(0)", c10::kFloat, "int pv_acc0[8][4];"}}) {
    SCOPED_TRACE(std::string(c.expr) + " " + c10::toString(c.dtype));
    const std::string src = body(compiled(module_returning("x", c.expr), {torch::randn({4096, 256}).to(c.dtype)}));
    EXPECT_TRUE(tftest::contains_in_order(src, {"tf_last = tf_count_arrival((p.counters + blockIdx.x)) == (unsigned)p.split - 1u;",
                                                "for (tf_index s0 = ty; ok && s0 < (tf_index)p.split; s0 += ", c.batch,
                                                "tf_load_partials(pv_acc"}))
        << src;
    EXPECT_EQ(src.find("__threadfence"), std::string::npos) << src;
  }
  const std::string full = body(compiled(module_returning("x", "(x * x).mean()"), {torch::randn({512, 256})}));
  EXPECT_TRUE(tftest::contains_in_order(full, {"tf_count_arrival(p.counters) == gridDim.x - 1u", "#pragma unroll 4", "__ldcg(p.part_acc0 + q)"}))
      << full;
  EXPECT_EQ(full.find("__threadfence"), std::string::npos) << full;
}

// One-pass column reductions take Tuning::column_rows threads along the reduced dim (blocks of
// Tuning::column_tile_threads x rows), fewer where the block's partial rows would outgrow 46 KiB
// of shared memory; NVRTC compiles each.
TEST(ColumnRows, TallerBlocksWithinSharedMemory) {
  struct Case {
    const char* knobs;
    const char* expr;
    c10::ScalarType dtype;
    std::vector<std::string> expected;
  };
  // (The cases that test rows or sums on tiles of 32 threads name them: the default tile is 16.)
  const std::vector<Case> cases = {
      // The default: 64 columns of 16 threads over 16 rows (Inductor's shape for this sum).
      {"", "x.sum(1)", c10::kFloat,
       {"16 threads x 4 columns along the kept inner dims, 16 threads along the reduced dim", "__launch_bounds__(256, 4)",
        "const int tx = threadIdx.x & 15;", "const int ty = threadIdx.x >> 4;", "% tiles) * 64 + tx * 4;",
        "double smem_acc0[16][64];", "y < 16;"}},
      {"column_tile_threads=32,column_rows=8", "x.sum(1)", c10::kFloat,
       {"32 threads x 4 columns along the kept inner dims, 8 threads along the reduced dim", "__launch_bounds__(256, 4)",
        "double smem_acc0[8][128];", "y < 8;"}},
      {"column_tile_threads=32,column_rows=32", "x.sum(1)", c10::kFloat,
       {"32 threads along the reduced dim", "__launch_bounds__(1024, 1)", "(tf_index)blockIdx.y * 32 + ty", "double smem_acc0[32][128];", "y < 32;"}},
      {"column_tile_threads=32,column_rows=16", "x.sum(1) + x.amax(1)", c10::kBFloat16,
       {"__launch_bounds__(512, 2)", "float smem_acc0[16][256];", "float smem_acc1[16][256];"}},
      // A double and a float partial row of 4 columns a thread: 32 rows would take 48 KiB, the
      // whole static limit.
      {"column_tile_threads=32,column_rows=32", "x.sum(1) + x.amax(1)", c10::kFloat,
       {"16 threads along the reduced dim", "double smem_acc0[16][128];"}},
      // 8 threads a tile in blocks of 64.
      {"column_tile_threads=8,column_rows=8", "x.sum(1) + x.amax(1)", c10::kBFloat16,
       {"8 threads x 8 columns", "__launch_bounds__(64, 16)", "const int tx = threadIdx.x & 7;", "float smem_acc0[8][64];"}},
      // Three double sums of vectors of 8 halves overflow it at 8 rows too: one column a thread.
      {"column_tile_threads=32,column_rows=8", "x.float().sum(1) + (x * x).float().sum(1) + (x.float() * 2.0).sum(1)", c10::kHalf,
       {"32 threads x 1 columns along the kept inner dims, 8 threads", "double smem_acc2[8][32];"}},
      // Double partial rows of 8 columns a thread: 32 rows would take 64 KiB.
      {"column_tile_threads=32,column_rows=32", "x.float().sum(1)", c10::kHalf,
       {"16 threads along the reduced dim", "double smem_acc0[16][256];"}},
      // Float sums before the double partials: compensated, plain; the max keeps its own.
      {"column_float_sums=1", "x.sum(1) + x.amax(1)", c10::kFloat,
       {"float sum_acc0[4];", "float comp_acc0[4];", "const float kahan_y = ", "comp_acc0[lane] = (kahan_t - sum_acc0[lane]) - kahan_y;",
        "acc1[lane] = tf_max_op()(acc1[lane], ", "acc0[lane] += (double)sum_acc0[lane] - (double)comp_acc0[lane];", "double smem_acc0[16][64];"}},
      {"column_float_sums=2", "x.sum(1)", c10::kFloat, {"float sum_acc0[4];", "sum_acc0[lane] += ", "acc0[lane] += (double)sum_acc0[lane];"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.knobs) + " " + c.expr + " " + c10::toString(c.dtype));
    torchfuse::runtime::ScopedTuning t(with(c.knobs));
    const std::string src = compiled(module_returning("x", c.expr), {torch::randn({8, 512, 256}).to(c.dtype)});
    EXPECT_TRUE(tftest::contains_in_order(src, c.expected)) << src;
  }
}

// Which loads and stores carry an L2 eviction hint (codegen/cache_hints.cpp), by how the kernel
// moves its data.
TEST(CacheHints, ByHowTheKernelMovesItsData) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto bf16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  const std::string once_bf16 = "tf_load_once(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0";
  // Kernels that only read, over 16-bit inputs: evict-first loads. Over f32: none.
  const auto lse = module_returning("x", "torch.logsumexp(x, -1)");
  EXPECT_NE(body(kernel_source(lse, {bf16({4, 4096})})).find(once_bf16), std::string::npos);
  EXPECT_EQ(body(kernel_source(lse, {torch::randn({4, 4096})})).find("tf_load_"), std::string::npos);
  EXPECT_NE(body(kernel_source(module_returning("x", "x.sum(0)"), {bf16({512, 256})})).find(once_bf16), std::string::npos);
  EXPECT_NE(body(kernel_source(module_returning("x", "(x * x).mean()"), {bf16({512, 256})})).find(once_bf16),
            std::string::npos);
  // Kernels that write element outputs (rows kept on chip, pointwise): none.
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  const std::vector<c10::IValue> ln_in{bf16({4, 4096}), bf16({4096}), bf16({4096})};
  std::string src = body(kernel_source(ln, ln_in));
  EXPECT_EQ(src.find("tf_load_"), std::string::npos) << src;
  EXPECT_EQ(src.find("tf_store_once"), std::string::npos) << src;
  EXPECT_EQ(body(kernel_source(module_returning("x", "torch.tanh(x) + 1.0"), {bf16({64, 256})})).find("tf_load_"),
            std::string::npos);
  // Looped rows (not ringed): evict-last loads before the last pass, evict-first in it and for the output.
  torchfuse::runtime::ScopedTuning no_ring(with("row_ring=0"));
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  const std::vector<c10::IValue> long_rows{bf16({4, 65536})};
  src = body(kernel_source(softmax, long_rows));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0", once_bf16,
                                              "tf_store_once(reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0"}))
      << src;
  {
    torchfuse::runtime::ScopedTuning none(with("cache_hints=0,row_ring=0"));
    src = body(kernel_source(softmax, long_rows));
    EXPECT_EQ(src.find("tf_load_"), std::string::npos) << src;
    EXPECT_EQ(src.find("tf_store_once"), std::string::npos) << src;
  }
  // All hints: still none on operands whose elements serve several rows (the weights); the rows
  // kept in registers load evict-last.
  torchfuse::runtime::ScopedTuning all(with("cache_hints=1,row_stage=0,row_ring=0"));
  src = body(kernel_source(ln, ln_in));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0", "= *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1",
                                              "= *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in2", "tf_store_once("}))
      << src;
  const auto bias = module_returning("x, b", "(x + b) * 2.0");
  src = body(kernel_source(bias, {torch::randn({64, 256}), torch::randn({256})}));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_load_once(reinterpret_cast<const tf_vec<float, 4>*>(in0 + i)",
                                              "= *reinterpret_cast<const tf_vec<float, 4>*>(in1 + off1)", "tf_store_once("}))
      << src;
}

// Rows a block keeps on chip for its later passes (codegen/cache_hints.cpp): in registers from 4096
// elements, the passes before the last load them with evict-last (the last pass reads them in
// registers, and loads the weights plainly); in shared memory, their bulk copies.
TEST(CacheHints, RowsKeptInRegistersLoadEvictLast) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const std::string keep_f32 = "tf_load_keep(reinterpret_cast<const tf_vec<float, 4>*>(in";
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  const std::vector<c10::IValue> ln_in{torch::randn({4, 4096}), torch::randn({4096}), torch::randn({4096})};
  std::string src = body(kernel_source(ln, ln_in));
  EXPECT_TRUE(tftest::contains_in_order(src, {keep_f32 + "0", "tf_block_collect",
                                              "= *reinterpret_cast<const tf_vec<float, 4>*>(in1", "= *reinterpret_cast<const tf_vec<float, 4>*>(in2"}))
      << src;
  EXPECT_EQ(src.find(keep_f32, src.find(keep_f32) + 1), std::string::npos) << src;  // loaded once
  EXPECT_EQ(src.find("tf_store_once"), std::string::npos) << src;
  // add + layer norm: both row inputs.
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 4096));
  src = body(kernel_source(add_ln, {torch::randn({4, 4096}), torch::randn({4, 4096}), torch::randn({4096}), torch::randn({4096})}));
  EXPECT_TRUE(tftest::contains_in_order(src, {keep_f32 + "0", keep_f32 + "1"})) << src;
  // Rows of 65536 shared by a cluster keep their slices in registers too.
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  src = body(kernel_source(softmax, {torch::randn({4, 65536})}));
  EXPECT_NE(src.find("tf_cluster_rank"), std::string::npos) << src;
  EXPECT_NE(src.find(keep_f32 + "0"), std::string::npos) << src;
  // Not on rows of 1024 in registers (attention softmax lost with it), f32 or 16-bit; 16-bit rows
  // of 4096 in registers take it.
  const std::vector<c10::IValue> short_rows{torch::randn({64, 1024})};
  EXPECT_EQ(body(kernel_source(softmax, short_rows)).find("tf_load_"), std::string::npos);
  const auto bf16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  EXPECT_EQ(body(kernel_source(softmax, {bf16({64, 1024})})).find("tf_load_"), std::string::npos);
  {
    torchfuse::runtime::ScopedTuning registers(with("row_stage=0"));
    src = kernel_source(softmax, {bf16({64, 4096})});
    EXPECT_NE(src.find("cached mode"), std::string::npos) << src;
    EXPECT_NE(body(src).find("tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0"), std::string::npos) << src;
  }
  // Rows in shared memory (staged or ringed) take it at every length: their bulk copies.
  const auto ln1280 = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 1280));
  src = kernel_source(ln1280, {bf16({4, 1280}), bf16({1280}), bf16({1280})});
  EXPECT_NE(src.find("tf_bulk_load_keep(buf"), std::string::npos) << src;
  EXPECT_EQ(src.find("tf_bulk_load(buf"), std::string::npos) << src;
  {
    torchfuse::runtime::ScopedTuning off(with("row_hold=0"));
    EXPECT_EQ(body(kernel_source(ln, ln_in)).find("tf_load_"), std::string::npos);
  }
  torchfuse::runtime::ScopedTuning on(with("row_hold=1"));
  EXPECT_NE(body(kernel_source(softmax, short_rows)).find(keep_f32 + "0"), std::string::npos);
}

// Inputs several rows read: an attention mask (one row per query, the same for every batch and
// head) loads evict-last and kept in L1, in f32 and bf16, while the score rows stay plain; a layer
// norm's weights (the same row for every row) only with shared_hold=1; none with shared_hold=0.
TEST(CacheHints, AttentionMaskLoadsEvictLast) {
  const auto attn = module_from(tftest::suite_pattern("attn_softmax_mask").source);
  const auto shared = [](const std::string& type, int vec, int k) {
    return "tf_load_shared(reinterpret_cast<const tf_vec<" + type + ", " + std::to_string(vec) + ">*>(in" + std::to_string(k);
  };
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const std::vector<c10::IValue> in{torch::randn({2, 4, 64, 1024}).to(dtype), torch::randn({1, 1, 64, 1024}).to(dtype)};
    const std::string src = body(compiled(attn, in));  // NVRTC compiles the hinted loads
    const std::string type = dtype == c10::kFloat ? "float" : "tf_bf16";
    const int vec = dtype == c10::kFloat ? 4 : 8;
    EXPECT_NE(src.find(shared(type, vec, 1)), std::string::npos) << src;
    EXPECT_EQ(src.find(shared(type, vec, 0)), std::string::npos) << src;
    EXPECT_EQ(src.find("tf_load_keep("), std::string::npos) << src;
    torchfuse::runtime::ScopedTuning off(with("shared_hold=0"));
    EXPECT_EQ(body(kernel_source(attn, in)).find("tf_load_shared("), std::string::npos);
  }
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  const std::vector<c10::IValue> ln_in{torch::randn({4, 4096}), torch::randn({4096}), torch::randn({4096})};
  EXPECT_EQ(body(kernel_source(ln, ln_in)).find("tf_load_shared("), std::string::npos);
  torchfuse::runtime::ScopedTuning on(with("shared_hold=1"));
  const std::string src = body(kernel_source(ln, ln_in));
  EXPECT_TRUE(tftest::contains_in_order(src, {shared("float", 4, 1), shared("float", 4, 2)})) << src;
}

// Hinted loads of every vector size (2, 4, 8 and 16 bytes: a double iteration reads bools, bf16,
// floats and doubles two at a time) compile through NVRTC.
TEST(CacheHints, EveryVectorSizeCompiles) {
  torchfuse::runtime::ScopedTuning all(with("cache_hints=1"));
  const auto m = module_returning("m, x, y, z", "torch.where(m, x, y.double() + z.double())");
  const std::vector<c10::IValue> in{torch::randn({64, 256}) > 0, torch::randn({64, 256}).to(c10::kDouble),
                                    torch::randn({64, 256}), torch::randn({64, 256}).to(c10::kBFloat16)};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, true);
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_GT(e.cubin_bytes.at(0), 0u);
  EXPECT_TRUE(tftest::contains_in_order(
      e.kernels[0].source, {"tf_load_once(reinterpret_cast<const tf_vec<float, 2>*>(in0", "tf_vec<tf_bf16, 2>*>(in1",
                            "tf_vec<bool, 2>*>(in2", "tf_vec<double, 2>*>(in3", "tf_store_once("}))
      << e.kernels[0].source;
}

// A pointwise group with a transposed input reads it tile by tile through shared memory along its
// own contiguous dim and writes along the output's (PointwiseLayout::tile_dim), 8 bytes a thread
// where the launch finds the accesses aligned (p.vec_ok), else one element; NVRTC compiles each
// tile size and dtype. Small dims, pointwise_tile=0 and inputs in the output's order take
// the plain kernel.
TEST(TiledPointwise, TransposedInputsGoThroughSharedMemory) {
  const auto m = module_returning("x, y", "torch.sigmoid(x.t()) * y");
  for (auto dtype : {c10::kFloat, c10::kBFloat16, c10::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    torchfuse::runtime::ScopedTuning t32(with("pointwise_tile=32"));
    const std::vector<c10::IValue> in = {torch::randn({96, 64}).to(dtype), torch::randn({64, 96}).to(dtype)};
    const std::string src = body(compiled(m, in));
    // 8 bytes a thread: 2 f32 or 4 16-bit elements; 32 x 32 tiles over 256 threads.
    const bool f32 = dtype == c10::kFloat;
    EXPECT_TRUE(tftest::contains_in_order(
        src, {"__shared__ float tile0[32][32 + 1];", "if (p.vec_ok)", f32 ? "constexpr int V = 2;" : "constexpr int V = 4;",
              "const tf_index ct = min(ct0 + tx * V, st - V);", "const tf_index cl = min(cl0 + j, sl - 1);", " w0 = ",
              "tile0[j][tx * V + v] = ", f32 ? "d1[2][V];" : "d1[1][V];", "const tf_index cl = min(cl0 + tx * V, sl - V);", " w1 = ",
              "__syncthreads();", "if (ct >= st || cl >= sl) continue;", "const tf_index i = base + ct * os0 + cl;",
              "tf_K_compute(tile0[tx * V + v][j], d1[q][v], r0[v]);", "(out0 + i", "else", "constexpr int V = 1;",
              "tile0[j][tx] = ", "in0[base0 + ct * (tf_index)p.in0_stride[0] + cl * (tf_index)p.in0_stride[1]]",
              "d1[4][V];", "out0[i] = "}))
        << src;
  }
  const std::vector<c10::IValue> in = {torch::randn({96, 64}), torch::randn({64, 96})};
  for (const char* tile : {"16", "32"}) {
    torchfuse::runtime::ScopedTuning t(with(std::string("pointwise_tile=") + tile));
    const std::string src = body(compiled(m, in));
    EXPECT_NE(src.find(std::string("tile0[") + tile + "][" + tile + " + 1];"), std::string::npos) << src;
  }
  {
    torchfuse::runtime::ScopedTuning off(with("pointwise_tile=0"));
    EXPECT_EQ(body(kernel_source(m, in)).find("tile0"), std::string::npos);
  }
  // Dims of fewer than half a tile, and inputs in the output's order: no tiles.
  EXPECT_EQ(body(kernel_source(m, {torch::randn({96, 8}), torch::randn({8, 96})})).find("__shared__"), std::string::npos);
  EXPECT_EQ(body(kernel_source(module_returning("x, y", "torch.sigmoid(x) * y"), {torch::randn({64, 96}), torch::randn({64, 96})}))
                .find("__shared__"),
            std::string::npos);
}

// The tile dim is the one most transposed bytes are contiguous along; outer dims, broadcast and
// in-order inputs are read directly, and a second transposed input along the same dim shares the
// schedule (each its own tile).
TEST(TiledPointwise, OuterDimsAndSeveralInputs) {
  // x: [b, c, t] read as [b, t, c]: contiguous along the domain's dim 1.
  const auto m = module_returning("x, z, y, w", "torch.relu(x.transpose(1, 2) + z.transpose(1, 2)) * y + w");
  const std::vector<c10::IValue> in = {torch::randn({4, 48, 80}), torch::randn({4, 48, 80}), torch::randn({4, 80, 48}),
                                       torch::randn({48})};
  const std::string src = body(compiled(m, in));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tile0[64][64 + 1];", "tile1[64][64 + 1];", "const tf_index c0 = rem % (tf_index)p.size[0];",
                                              "const tf_index base = c0 * os0;", "const tf_index i = base + ct * os1 + cl;",
                                              "tf_K_compute(tile0[tx * V + v][j], tile1[tx * V + v][j], d2[q][v], d3[q][v], "}))
      << src;
}

// Each tiled input declares a tile of floats in static shared memory, which a block may hold 48 KiB
// of: three transposed inputs take tiles of 32 instead of 64 (3 x 64 x 65 x 4 bytes would pass
// it; fuzz seed 7, program 550), and NVRTC builds the kernel. Two fit tiles of 64.
TEST(TiledPointwise, TilesShrinkToFitSharedMemory) {
  const auto three = module_returning("x, y, z", "torch.relu(x.t()) * y.t() + z.t()");
  const std::vector<c10::IValue> in3 = {torch::randn({96, 80}), torch::randn({96, 80}), torch::randn({96, 80})};
  const std::string src3 = body(compiled(three, in3));
  EXPECT_TRUE(tftest::contains_in_order(src3, {"tile0[32][32 + 1];", "tile1[32][32 + 1];", "tile2[32][32 + 1];"})) << src3;
  const auto two = module_returning("x, y, z", "torch.relu(x.t()) * y.t() + z");
  const std::string src2 = body(compiled(two, {torch::randn({96, 80}), torch::randn({96, 80}), torch::randn({80, 96})}));
  EXPECT_TRUE(tftest::contains_in_order(src2, {"tile0[64][64 + 1];", "tile1[64][64 + 1];"})) << src2;
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto options = tftest::quiet_options();
    options.offline_arch = arch;
    const torchfuse::Explanation e = torchfuse::compile(three, options).explain(in3, /*compile_kernels=*/true);
    ASSERT_EQ(e.cubin_bytes.size(), 1u) << arch;
    EXPECT_GT(e.cubin_bytes[0], 0u) << arch;
  }
}

// Column groups of several passes keep each thread's rows in registers where they fit
// Tuning::column_cache (8 threads along the column with half the budget, else 16), read the
// column once and take the later passes from the registers; longer columns, or column_cache=0,
// read the column in every pass. NVRTC compiles each form.
TEST(ColumnCache, PassesReadTheColumnOnce) {
  const auto softmax = module_returning("x", "torch.softmax(x, dim=1)");
  struct Case {
    int64_t rows;
    const char* declare;  // the cache
    const char* block;
  };
  for (const auto& c : {Case{200, "float c0[32];", "__launch_bounds__(256)"}, Case{512, "float c0[32];", "__launch_bounds__(512)"},
                        Case{1000, "float c0[64];", "__launch_bounds__(512)"}}) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::to_string(c.rows) + " " + c10::toString(dtype));
      const std::string src = body(compiled(softmax, {torch::randn({4, c.rows, 64}).to(dtype)}));
      EXPECT_TRUE(tftest::contains_in_order(src, {c.block, c.declare, "for (int u = 0; u < ", "(tf_index)p.red - 1);", "c0[u] = ",
                                                  "for (int u = 0; u < ", "if (ok && r < (tf_index)p.red)", "c0[u]",
                                                  "__syncthreads();", "for (int u = 0; u < ", "c0[u]"}))
          << src;
    }
  }
  // Two element inputs take twice the registers: 16 threads along a column of 256.
  const std::string two = body(compiled(module_returning("x, y", "torch.softmax(x * y, dim=0)"), {torch::randn({256, 64}), torch::randn({256, 64})}));
  EXPECT_TRUE(tftest::contains_in_order(two, {"__launch_bounds__(512)", "float c0[16];", "float c1[16];"})) << two;
  // Too long for the budget, or no cache: the column is read in every pass (with a block per
  // tile: these few tiles would split otherwise, FewTilesSplitTheirRows).
  torchfuse::runtime::ScopedTuning unsplit(with("column_pass_blocks=0"));
  const std::string looped = body(compiled(softmax, {torch::randn({2, 1500, 64})}));
  EXPECT_EQ(looped.find("c0[u]"), std::string::npos) << looped;
  EXPECT_NE(looped.find("r += 8)"), std::string::npos) << looped;
  torchfuse::runtime::ScopedTuning off(with("column_cache=0,column_pass_blocks=0"));
  EXPECT_EQ(body(kernel_source(softmax, {torch::randn({4, 200, 64})})).find("c0[u]"), std::string::npos);
}

// Column groups of several passes over fewer tiles of 32 columns than fill the device split each
// tile's rows over blocks (choose_column_pass_split) that meet at a barrier after every pass with
// reductions: softmax takes two rounds (max, then sum), x - x.mean(0) one; the last block out
// puts the tile's counter back to zero. Looped passes load column_pass_unroll rows a thread before
// computing them and alternate their direction; a split whose rows fit the registers keeps them
// there. column_pass_blocks=0, or columns enough to fill the
// device, keep a block per tile. NVRTC compiles each form. (One column a thread: vectors of
// columns, LongColumnsTakeVectorsOfColumns, make the tiles fewer. The softmax sum's pass of its
// own: column_online=0; online sums, LoopedColumnSplitsTakeOnlineSoftmaxSums.)
TEST(ColumnPasses, FewTilesSplitTheirRows) {
  const auto softmax = module_returning("x", "torch.softmax(x, dim=0)");
  torchfuse::runtime::ScopedTuning scalar(with("column_pass_vectors=0,column_online=0"));
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    // [4096, 2048]: 64 tiles, 8 blocks each (4 a multiprocessor on 132), 512 rows a block: looped.
    const std::string src = compiled(softmax, {torch::randn({4096, 2048}).to(dtype)});
    EXPECT_TRUE(tftest::contains_in_order(src, {"void tf_K_tile_barrier(unsigned* counter, unsigned target)", "tf_count_arrival(counter);",
                                                "ld.acquire.gpu.global.u32", "__launch_bounds__(256, 4)",
                                                "const tf_index r0 = (tf_index)blockIdx.y * rows_per_block;",
                                                "for (tf_index rb = r0 + ty; ok && rb < r1; rb += 96)", "float c0[12];",
                                                "const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);", "c0[u] = ",
                                                "const tf_index r = rb + (tf_index)u * 8;", "if (r < r1)",
                                                "tf_K_tile_barrier(tile_counter, (unsigned)p.split * 1u);",
                                                "for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8)",
                                                "smem_acc0[ty][tx] = total_acc0;", "__syncthreads();",
                                                "total_acc0 = smem_acc0[0][tx];",
                                                "for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= 96)",
                                                "const tf_index r = max(rb - (tf_index)u * 8, r0);", "if (r >= r0)",
                                                "tf_K_tile_barrier(tile_counter, (unsigned)p.split * 2u);",
                                                "tf_count_arrival(tile_counter) == (unsigned)p.split * 3u - 1u) *tile_counter = 0u;",
                                                "for (tf_index rb = r0 + ty; ok && rb < r1; rb += 96)"}))
        << src;
  }
  // x - x.mean(0) on [8192, 64]: 2 tiles split 128 ways, 64 rows a block: 8 a thread in registers.
  const std::string center = compiled(module_returning("x", "x - x.mean(0, keepdim=True)"), {torch::randn({8192, 64})});
  EXPECT_TRUE(tftest::contains_in_order(center, {"__launch_bounds__(256, 4)", "float c0[8];", "if (r1 > r0)",
                                                 "min(r0 + ty + (tf_index)u * 8, r1 - 1);", "if (ok && r < r1)",
                                                 "(unsigned)p.split * 1u);", "(unsigned)p.split * 2u - 1u) *tile_counter = 0u;"}))
      << center;
  EXPECT_EQ(center.find("(unsigned)p.split * 2u);"), std::string::npos) << center;
  // Enough tiles (282 of 32 columns, more than half of 4 blocks a multiprocessor), or no split
  // asked for: a block per tile, no barrier.
  const std::string wide = body(kernel_source(softmax, {torch::randn({1100, 9000})}));
  EXPECT_EQ(wide.find("tile_barrier"), std::string::npos) << wide;
  torchfuse::runtime::ScopedTuning off(with("column_pass_blocks=0,column_pass_vectors=0"));
  const std::string unsplit = kernel_source(softmax, {torch::randn({4096, 2048})});
  EXPECT_EQ(unsplit.find("tile_barrier"), std::string::npos) << unsplit;
  EXPECT_NE(unsplit.find("for (tf_index r = ty; ok && r < (tf_index)p.red; r += 8)"), std::string::npos) << unsplit;
}

// The layout choose_column_pass_split plans for column passes over `sizes` (reducing dim 0, one
// looped column a thread, as ColumnUnit::plan asks first), for the offline sm_90 target (132
// multiprocessors, 50 MB of L2).
cg::ReductionLayout split_layout(const std::vector<cg::OperandShape>& inputs, const std::vector<int64_t>& domain,
                                 const std::string& spec) {
  const cg::Tuning tune = with(spec);
  const cg::DeviceTarget target = cg::offline_target("sm_90", tune);
  cg::ReductionLayout l = cg::plan_reduction_layout(torchfuse::Schedule::ColumnReduction, domain, {0}, inputs, {}, nullptr,
                                                    target, tune, true);
  l.vec = 1;
  l.cached = false;
  cg::choose_column_pass_split(l, target, tune);
  return l;
}

// split_layout's {split, wave_tiles}.
std::pair<int, int64_t> pass_split(const std::vector<cg::OperandShape>& inputs, const std::vector<int64_t>& domain,
                                   const std::string& spec) {
  const cg::ReductionLayout l = split_layout(inputs, domain, spec);
  return {l.split, l.wave_tiles};
}

// Under column_pass_wave_kb=-1, split column passes whose tiles' element inputs outgrow L2 take
// the tiles in waves: the grid holds as many tiles as fit three quarters of L2 (evened out over
// the waves), each split over more blocks; inputs that fit L2, and the default (0), keep every
// tile at once. A tile's row counts
// 32 elements of a contiguous input, one of an input broadcast along the columns and a 32-byte
// sector an element of a strided one.
TEST(ColumnPasses, TilesOutgrowingL2TakeWaves) {
  const auto f = c10::kFloat, h = c10::kBFloat16;
  const auto x = [](std::vector<int64_t> sizes, c10::ScalarType t) {
    return cg::OperandShape{true, t, sizes, {sizes[1], 1}};
  };
  // [16384, 4096] f32: 128 tiles of 2 MB, 18 fit 37.5 MB: 8 waves of 16 tiles, 528 / 16 blocks each.
  EXPECT_EQ(pass_split({x({16384, 4096}, f)}, {16384, 4096}, "column_pass_wave_kb=-1"), std::make_pair(33, int64_t{16}));
  // bf16: 128 tiles of 1 MB, 37 fit: 4 waves of 32.
  EXPECT_EQ(pass_split({x({16384, 4096}, h)}, {16384, 4096}, "column_pass_wave_kb=-1"), std::make_pair(16, int64_t{32}));
  // [16384, 2048] bf16: 64 tiles, 2 waves of 32.
  EXPECT_EQ(pass_split({x({16384, 2048}, h)}, {16384, 2048}, "column_pass_wave_kb=-1"), std::make_pair(16, int64_t{32}));
  // [4096, 2048] f32: 32 MB fit; every tile at once (64 tiles, 8 blocks each). Likewise with waves off.
  EXPECT_EQ(pass_split({x({4096, 2048}, f)}, {4096, 2048}, "column_pass_wave_kb=-1"), std::make_pair(8, int64_t{0}));
  EXPECT_EQ(pass_split({x({16384, 4096}, f)}, {16384, 4096}, ""), std::make_pair(4, int64_t{0}));  // the default: off
  // A budget of 4 MB: 2 tiles of 2 MB a wave, split at most 16384 / 64 rows.
  EXPECT_EQ(pass_split({x({16384, 4096}, f)}, {16384, 4096}, "column_pass_wave_kb=4096"), std::make_pair(256, int64_t{2}));
  // x + y with y [16384, 1] (one element a tile row, read once a row): [16384, 4352], 136 tiles
  // of about 2 MB, 18 fit: 8 waves of 17, 31 blocks each.
  const cg::OperandShape y{true, f, {16384, 1}, {1, 0}};
  EXPECT_EQ(pass_split({x({16384, 4352}, f), y}, {16384, 4352}, "column_pass_wave_kb=-1"), std::make_pair(31, int64_t{17}));
  // A transposed input: 1 KB a tile row, [4096, 1024] 32 tiles of 4 MB: 9 fit, 4 waves of 8.
  const cg::OperandShape t{true, f, {4096, 1024}, {1, 4096}};
  EXPECT_EQ(pass_split({t}, {4096, 1024}, "column_pass_wave_kb=-1"), std::make_pair(64, int64_t{8}));
  // [1100, 9000] f32 (39.7 MB) fits L2: 282 tiles at once, too many to split.
  EXPECT_EQ(pass_split({x({1100, 9000}, f)}, {1100, 9000}, "column_pass_wave_kb=-1"), std::make_pair(1, int64_t{0}));
  // [2200, 9000] does not: 139 tiles of 0.28 MB fit, 3 waves of 94, 5 blocks each.
  EXPECT_EQ(pass_split({x({2200, 9000}, f)}, {2200, 9000}, "column_pass_wave_kb=-1"), std::make_pair(5, int64_t{94}));
}

// column_pass_blocks above kColumnBlocksPerSm (up to 8): the cooperative split aims at that many
// blocks of 256 a multiprocessor, and the kernel's launch bounds say so (holding its registers
// to what that many blocks leave); at the default (4) and below, the bounds stay at 4.
TEST(ColumnPasses, SplitPassesAimAtMoreBlocksAMultiprocessor) {
  const auto f = c10::kFloat;
  const auto plan = [](const std::string& spec) {
    const cg::ReductionLayout l = split_layout({cg::OperandShape{true, c10::kFloat, {16384, 4096}, {4096, 1}}}, {16384, 4096}, spec);
    return std::make_pair(l.split, l.split_blocks);
  };
  // 128 tiles: 4 a multiprocessor on 132 take 4 blocks a tile, 8 take 8, 2 take 2.
  EXPECT_EQ(plan(""), std::make_pair(4, 4));
  EXPECT_EQ(plan("column_pass_blocks=8"), std::make_pair(8, 8));
  EXPECT_EQ(plan("column_pass_blocks=6"), std::make_pair(6, 6));
  EXPECT_EQ(plan("column_pass_blocks=2"), std::make_pair(2, 2));
  EXPECT_THROW(with("column_pass_blocks=9"), torchfuse::Error);

  const auto center = module_returning("x", "x - x.mean(0, keepdim=True)");
  for (const auto& [spec, bounds] : {std::make_pair(std::string("column_pass_blocks=8"), "__launch_bounds__(256, 8)"),
                                     std::make_pair(std::string("column_pass_blocks=2"), "__launch_bounds__(256, 4)"),
                                     std::make_pair(std::string(""), "__launch_bounds__(256, 4)")}) {
    SCOPED_TRACE(spec);
    torchfuse::runtime::ScopedTuning tuned(with(spec));
    const std::string src = compiled(center, {torch::randn({4096, 2048}).to(f)});
    EXPECT_NE(src.find(bounds), std::string::npos) << src;
    EXPECT_NE(src.find("tile_barrier"), std::string::npos) << src;
  }
}

// Under column_pass_launches=n a looped split takes a launch per pass (p.phase): launch k runs the
// pass after k exchanges, ending on its partials' writes; the passes before take their totals
// from the partials the earlier launches wrote. No tile barrier, no counters, launch bounds of n
// blocks a multiprocessor, and a split not capped by residency; rows never stay in registers
// across launches. NVRTC builds each form.
TEST(ColumnPasses, ALaunchPerPassExchangesAtTheKernelsEnd) {
  const auto f = c10::kFloat, h = c10::kBFloat16;
  const auto plan = [](int64_t rows, int64_t cols, c10::ScalarType t, const std::string& spec) {
    const cg::ReductionLayout l = split_layout({cg::OperandShape{true, t, {rows, cols}, {cols, 1}}}, {rows, cols}, spec);
    return std::make_pair(l.split, l.phased_blocks);
  };
  // [16384, 4096]: 128 tiles; 8 blocks a multiprocessor on 132 take 8 blocks a tile (4 cooperatively).
  EXPECT_EQ(plan(16384, 4096, h, "column_pass_launches=8"), std::make_pair(8, 8));
  EXPECT_EQ(plan(16384, 4096, f, "column_pass_launches=4"), std::make_pair(4, 4));
  EXPECT_EQ(plan(16384, 4096, f, ""), std::make_pair(4, 0));
  // [1100, 9000]: 282 tiles, too many to split cooperatively, split 3 ways at 8 a multiprocessor.
  EXPECT_EQ(plan(1100, 9000, f, "column_pass_launches=8"), std::make_pair(3, 8));
  EXPECT_EQ(plan(1100, 9000, f, ""), std::make_pair(1, 0));
  // Waves do not apply to launches per pass.
  EXPECT_EQ(plan(16384, 4096, f, "column_pass_launches=8,column_pass_wave_kb=-1"), std::make_pair(8, 8));

  const auto softmax = module_returning("x", "torch.softmax(x, dim=0)");
  torchfuse::runtime::ScopedTuning phased(with("column_pass_launches=8,column_online=0"));  // (three launches)
  for (auto dtype : {f, h}) {
    SCOPED_TRACE(c10::toString(dtype));
    const std::string src = compiled(softmax, {torch::randn({4096, 2048}).to(dtype)});
    EXPECT_TRUE(tftest::contains_in_order(src, {"long long phase;", "__launch_bounds__(256, 8)", "if (p.phase == 0)",
                                                "for (tf_index rb = r0 + ty; ok && rb < r1; rb += 96)", "p.part_acc0[", "__syncthreads();",
                                                "continue;", "__shared__ float smem_acc0[8][32];", "float total_acc0 = ",
                                                "for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8)", "if (p.phase == 1)",
                                                "p.part_acc1[", "continue;", " smem_acc1[8][32];", "if (p.phase == 2)",
                                                "for (tf_index rb = r0 + ty; ok && rb < r1; rb += 96)"}))
        << src;
    EXPECT_EQ(src.find("tile_barrier"), std::string::npos) << src;
    EXPECT_EQ(src.find("tile_counter"), std::string::npos) << src;
    EXPECT_EQ(src.find("if (p.phase == 3)"), std::string::npos) << src;
  }
  // x - x.mean(0) on [8192, 64]: split cooperatively, its rows fit registers (8 a thread); a launch
  // per pass loops over them in both.
  const auto center = module_returning("x", "x - x.mean(0, keepdim=True)");
  const std::string c = compiled(center, {torch::randn({8192, 64})});
  EXPECT_TRUE(tftest::contains_in_order(c, {"if (p.phase == 0)", "continue;", "if (p.phase == 1)", "for (tf_index rb = r1 - 1 - ty; ok && rb >= r0;"}))
      << c;
  EXPECT_EQ(c.find("c0[8];"), std::string::npos) << c;
  // A mean/var normalization returning the variance too: the row output written by the launch
  // that runs the pass after it.
  const auto norm = module_returning("x", "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5), x.var(0, keepdim=True, unbiased=False)");
  const std::string n = compiled(norm, {torch::randn({16384, 256})});
  EXPECT_TRUE(tftest::contains_in_order(n, {"if (p.phase == 0)", "if (p.phase == 1)", "if (p.phase == 2 && ty == 0 && blockIdx.y == 0 && ok) out"}))
      << n;
}

// The kernel of a split layout loops over the grid's tiles (blockIdx.x, then gridDim.x on), so a
// grid of one wave's tiles covers them all; a tile's counter is its own. With waves the first
// pass's loads ask L2 to keep their lines (tf_load_keep), the last pass's loads and the element
// outputs' stores to evict them first; column_pass_wave_hints=0 or cache_hints=0 leave plain
// accesses. A layout of one wave (the tiles fit) has the loop and no hints. NVRTC builds each.
TEST(ColumnPasses, WavesLoopOverTilesWithHints) {
  const auto center = module_returning("x", "x - x.mean(0, keepdim=True)");
  const auto softmax = module_returning("x", "torch.softmax(x, dim=0)");
  const std::vector<std::string> loop = {"for (tf_index tile = blockIdx.x; tile < tiles * (tf_index)p.outer; tile += gridDim.x)",
                                         "const tf_index o = tile / tiles;", "const tf_index i = (tile % tiles) * 32 + tx;",
                                         "unsigned* const tile_counter = p.counters + tile * 32;"};
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const std::string storage = dtype == c10::kFloat ? "float" : "tf_bf16";
    // [8192, 256] under a 256 KB budget: several waves, rows looped (column_cache=0).
    torchfuse::runtime::ScopedTuning waves(with("column_pass_wave_kb=256,column_cache=0"));
    const std::string c = body(compiled(center, {torch::randn({8192, 256}).to(dtype)}));
    EXPECT_TRUE(tftest::contains_in_order(c, loop)) << c;
    EXPECT_TRUE(tftest::contains_in_order(c, {"c0[u] = ", "tf_load_keep(in0 + ooff0 + ioff0 + roff0)", "_tile_barrier(tile_counter",
                                              "tf_load_once(in0 + ooff0 + ioff0 + roff0)",
                                              "tf_store_once<" + storage + ">(out0 + (o * (tf_index)p.red + r) * (tf_index)p.inner + i, "}))
        << c;
    // Softmax (two passes: its sum accumulates with the max, column_online) keeps the first
    // pass's rows; the last pass ends on a barrier (no extra one). Three passes: the middle one
    // keeps its rows too.
    const std::string sm = body(compiled(softmax, {torch::randn({8192, 256}).to(dtype)}));
    EXPECT_EQ(tftest::count_occurrences(sm, "tf_load_keep("), 1) << sm;
    EXPECT_EQ(tftest::count_occurrences(sm, "tf_load_once("), 1) << sm;
    {
      torchfuse::runtime::ScopedTuning three(with("column_pass_wave_kb=256,column_cache=0,column_online=0"));
      const std::string s3 = body(compiled(softmax, {torch::randn({8192, 256}).to(dtype)}));
      EXPECT_EQ(tftest::count_occurrences(s3, "tf_load_keep("), 2) << s3;
      EXPECT_EQ(tftest::count_occurrences(s3, "tf_load_once("), 1) << s3;
    }
    EXPECT_TRUE(tftest::contains_in_order(sm, loop)) << sm;
    {
      torchfuse::runtime::ScopedTuning plain(with("column_pass_wave_kb=256,column_cache=0,column_pass_wave_hints=0"));
      const std::string p = body(compiled(center, {torch::randn({8192, 256}).to(dtype)}));
      EXPECT_TRUE(tftest::contains_in_order(p, loop)) << p;
      EXPECT_EQ(p.find("tf_load_"), std::string::npos) << p;
      EXPECT_EQ(p.find("tf_store_once"), std::string::npos) << p;
    }
    {
      torchfuse::runtime::ScopedTuning none(with("column_pass_wave_kb=256,column_cache=0,cache_hints=0"));
      const std::string p = body(kernel_source(center, {torch::randn({8192, 256}).to(dtype)}));
      EXPECT_EQ(p.find("tf_load_"), std::string::npos) << p;
    }
    // Cached rows in waves (64 rows a block, 8 a thread in registers): the loop, no hints.
    torchfuse::runtime::ScopedTuning cached(with("column_pass_wave_kb=256"));
    const std::string k = body(compiled(center, {torch::randn({8192, 256}).to(dtype)}));
    EXPECT_TRUE(tftest::contains_in_order(k, loop)) << k;
    EXPECT_NE(k.find("c0[8];"), std::string::npos) << k;
    EXPECT_EQ(k.find("tf_load_"), std::string::npos) << k;
  }
  // One wave (L2 holds [8192, 256]): the loop, plain accesses.
  torchfuse::runtime::ScopedTuning one(with("column_cache=0,column_pass_wave_kb=-1"));
  const std::string w = body(compiled(center, {torch::randn({8192, 256})}));
  EXPECT_TRUE(tftest::contains_in_order(w, loop)) << w;
  EXPECT_EQ(w.find("tf_load_"), std::string::npos) << w;
}

TEST(Unroll, EverySuiteKernelCompilesUnderEveryChoice) {
  const char* specs[] = {"pointwise_unroll=1,row_cache=values,column_unroll=1,full_unroll=1",
                         "pointwise_unroll=3,row_cache=inputs,column_unroll=2,full_unroll=5,cache_hints=1",
                         "row_stage=1,row_vectors=2", "row_stage=3", "row_early_loads=64,row_shared_rounds=0", ""};
  for (const char* spec : specs) {
    torchfuse::runtime::ScopedTuning t(with(spec));
    for (const auto& p : tftest::suite_patterns()) {
      for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
        SCOPED_TRACE(p.name + " " + c10::toString(dtype) + " [" + spec + "]");
        auto in = tftest::suite_small_inputs(p.name);
        for (auto& v : in) v = v.toTensor().to(dtype);
        const auto e = torchfuse::compile(module_from(tftest::with_row_length(p.source, 96)), tftest::quiet_options()).explain(in, true);
        ASSERT_EQ(e.kernels.size(), 1u);
        EXPECT_GT(e.cubin_bytes.at(0), 0u);
      }
    }
  }
}

}  // namespace

// Rows too few for their teams to fill the device (a model's 128 or 1024 token rows at batch 1
// or 8; the offline target has 132 multiprocessors, tuning().row_fill 1024 threads each): the
// teams widen while the rows' threads stay within the fill, and each block takes one row group.
TEST(FewRows, TeamsWidenToFillTheDevice) {
  const auto add_ln = module_from(
      "def forward(self, x, r, w, b):\n    h = x + r\n    return torch.layer_norm(h, [768], w, b, 1e-12), h\n");
  auto in = [](int64_t batch, c10::ScalarType t) {
    return std::vector<c10::IValue>{torch::randn({batch, 128, 768}).to(t), torch::randn({batch, 128, 768}).to(t),
                                    torch::randn({768}).to(t), torch::randn({768}).to(t)};
  };
  const std::string wide = "cached mode: 128 threads per row, block 128, vector width 8, 1 vectors per thread";
  for (int64_t batch : {1, 8}) {
    const std::string src = kernel_source(add_ln, in(batch, c10::kBFloat16));
    EXPECT_TRUE(tftest::contains_in_order(src, {wide, "each block takes 1 row team(s) in turn\n"})) << batch << src;
  }
  // 8192 rows fill it with a warp a row, as before; so do 1024 rows of float32 with 64 threads of
  // 3 vectors each (128 would split the row's 192 vectors unevenly, 256 would pass the fill).
  EXPECT_NE(kernel_source(add_ln, in(64, c10::kBFloat16)).find("cached mode: 32 threads per row, block 256"),
            std::string::npos);
  EXPECT_NE(kernel_source(add_ln, in(8, c10::kFloat)).find("64 threads per row, block 64, vector width 4, 3 vectors"),
            std::string::npos);
  torchfuse::runtime::ScopedTuning off(with("row_fill=0"));
  EXPECT_NE(kernel_source(add_ln, in(1, c10::kBFloat16)).find("cached mode: 32 threads per row, block 256"),
            std::string::npos);
}

// row_whole_warps=1: few bf16 rows of 768 (96 vectors) take teams of 96 threads, one vector each,
// and fill them exactly; f32 rows (192 vectors, 3 a thread in teams of 64), rows of 1024 and many
// rows keep their plans.
TEST(FewRows, WholeWarpTeamsFillTheRow) {
  const auto add_ln = module_from(
      "def forward(self, x, r, w, b):\n    h = x + r\n    return torch.layer_norm(h, [x.size(-1)], w, b, 1e-12), h\n");
  auto in = [](int64_t batch, int64_t cols, c10::ScalarType t) {
    return std::vector<c10::IValue>{torch::randn({batch, 128, cols}).to(t), torch::randn({batch, 128, cols}).to(t),
                                    torch::randn({cols}).to(t), torch::randn({cols}).to(t)};
  };
  // Kept as planned: f32 rows of 768 (3 vectors a thread), rows of 1024 (whole teams already),
  // many rows.
  const std::vector<std::vector<c10::IValue>> kept = {in(8, 768, c10::kFloat), in(8, 1024, c10::kBFloat16),
                                                       in(64, 768, c10::kBFloat16)};
  std::vector<std::string> before;
  {
    torchfuse::runtime::ScopedTuning defaults(cg::parse_tuning(""));
    for (const auto& inputs : kept) before.push_back(kernel_source(add_ln, inputs));
  }
  // (The defaults' few-rows widening, which with() leaves out.)
  torchfuse::runtime::ScopedTuning whole(cg::parse_tuning("row_whole_warps=1"));
  for (int64_t batch : {1, 8}) {
    const std::string src = kernel_source(add_ln, in(batch, 768, c10::kBFloat16));
    EXPECT_TRUE(tftest::contains_in_order(src, {"__launch_bounds__(96)", "const int tl = threadIdx.x % 96;"})) << batch << src;
    EXPECT_NE(src.find("cached mode: 96 threads per row, block 96, vector width 8, 1 vectors per thread"), std::string::npos)
        << src;
    // Exact: no column bounds check on the loads.
    EXPECT_EQ(body(src).find("< (tf_index)p.cols"), std::string::npos) << src;
  }
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kernel_source(add_ln, kept[i]), before[i]) << i;
  EXPECT_EQ(cg::parse_tuning("").row_whole_warps, 0);
  EXPECT_THROW(cg::parse_tuning("row_whole_warps=2"), torchfuse::Error);
}

TEST(FewRows, StayInRegistersInsteadOfStaging) {
  // bf16 rows of 2048 are staged in shared memory when they are many; 1024 of them are not.
  const auto add_rms = module_from(
      "def forward(self, x, r, w):\n    h = x + r\n    hf = h.float()\n"
      "    y = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-5)\n    return w * y.to(x.dtype), h\n");
  auto in = [](int64_t batch) {
    return std::vector<c10::IValue>{torch::randn({batch, 128, 2048}).to(c10::kBFloat16),
                                    torch::randn({batch, 128, 2048}).to(c10::kBFloat16),
                                    torch::randn({2048}).to(c10::kBFloat16)};
  };
  std::string src = kernel_source(add_rms, in(8));
  EXPECT_NE(src.find("cached mode: 128 threads per row, block 128, vector width 8, 2 vectors per thread"),
            std::string::npos) << src;
  EXPECT_EQ(body(src).find("tf_mbar_wait"), std::string::npos) << src;
  EXPECT_NE(body(kernel_source(add_rms, in(64))).find("tf_mbar_wait"), std::string::npos);
}

TEST(FewRows, SubWarpTeamsGrowByDoubling) {
  // bf16 softmax over rows of 128 (16 vectors): values that do not fit 4 vectors a thread take 8
  // threads of 2 (teams doubled from 4 until they fit; they went to 64 threads, 48 of them idle),
  // and where the rows are few, 16 threads of one.
  const auto softmax = module_returning("x", "torch.softmax(x * 0.125, -1)");
  std::string src = kernel_source(softmax, {torch::randn({1, 12, 128, 128}).to(c10::kBFloat16)});
  EXPECT_TRUE(tftest::contains_in_order(src, {"cached mode: 16 threads per row, block 256, vector width 8, 1 vectors",
                                              "each block takes 1 row team(s) in turn\n"}))
      << src;
  torchfuse::runtime::ScopedTuning many(with(""));
  src = kernel_source(softmax, {torch::randn({1, 12, 128, 128}).to(c10::kBFloat16)});
  EXPECT_NE(src.find("cached mode: 8 threads per row, block 256, vector width 8, 2 vectors"), std::string::npos) << src;
}

// Teams split a row's vectors evenly where a narrower team can (even_team in
// reduction_layout.cpp): no thread loads once more while others sit idle. Rows of 768 are 96
// bf16 vectors (a warp of 3 each, never 64 threads of 1 or 2) or 192 f32 ones (64 threads of 3,
// not 128 of 1 or 2); 2304 bf16 columns (288 vectors) have no even team of at most 4 vectors a
// thread, and keep 128 threads of 3, the last round part-filled.
TEST(EvenTeams, RowsSplitEvenlyWhereATeamCan) {
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-6)");
  const auto in = [](int64_t rows, int64_t cols, c10::ScalarType t) {
    return std::vector<c10::IValue>{torch::randn({rows, cols}).to(t), torch::randn({cols}).to(t), torch::randn({cols}).to(t)};
  };
  // A vision transformer's 1576 token rows (batch 8 of 197): widening to 64 threads would leave
  // half of them a second vector; 128 passes the fill.
  EXPECT_NE(kernel_source(ln, in(1576, 768, c10::kBFloat16)).find("cached mode: 32 threads per row, block 256, vector width 8, 3 vectors"),
            std::string::npos);
  EXPECT_NE(kernel_source(ln, in(1576, 768, c10::kFloat)).find("cached mode: 64 threads per row, block 64, vector width 4, 3 vectors"),
            std::string::npos);
  EXPECT_NE(kernel_source(ln, in(16384, 768, c10::kFloat)).find("cached mode: 64 threads per row, block 64, vector width 4, 3 vectors"),
            std::string::npos);
  // Rows of 1024 split evenly at every width: as before.
  EXPECT_NE(kernel_source(ln, in(16384, 1024, c10::kFloat)).find("cached mode: 128 threads per row, block 128, vector width 4, 2 vectors"),
            std::string::npos);
  const std::string uneven = kernel_source(ln, in(16384, 2304, c10::kBFloat16));
  EXPECT_NE(uneven.find("cached mode: 128 threads per row, block 128, vector width 8, 3 vectors"), std::string::npos) << uneven;
}

// Teams of a warp or more load every 16-bit input a later pass reads with the first pass's loads
// while their registers fit (a layer norm's weight; its bias, at 3 vectors a thread, would pass
// the 16 registers); teams of a few threads load at most one such input early.
TEST(EarlyLoads, TeamsOfAWarpOrMoreLoadSixteenBitInputsEarly) {
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-6)");
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  std::string src = kernel_source(ln, {b16({4096, 768}), b16({768}), b16({768})});
  EXPECT_NE(src.find("cached mode: 32 threads per row"), std::string::npos) << src;
  src = body(src);
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<tf_bf16, 8> early1[3];", "early1[k] = ", "const tf_vec<tf_bf16, 8> v1 = early1[k];"}))
      << src;
  EXPECT_EQ(src.find("early2["), std::string::npos) << src;
  // 128 threads a row (1024 rows of 1024): the weight and the bias, a vector each, load early.
  src = kernel_source(ln, {b16({1024, 1024}), b16({1024}), b16({1024})});
  EXPECT_NE(src.find("cached mode: 128 threads per row"), std::string::npos) << src;
  EXPECT_TRUE(tftest::contains_in_order(body(src), {"tf_vec<tf_bf16, 8> early1[1];", "tf_vec<tf_bf16, 8> early2[1];", "early1[k] = ",
                                                    "early2[k] = ", "tf_block_publish(acc0", "= early1[k];", "= early2[k];"}))
      << src;
  // Rows of 64 take teams of a few threads: the two 16-bit inputs load late.
  src = kernel_source(ln, {b16({16384, 64}), b16({64}), b16({64})});
  EXPECT_EQ(src.find("cached mode: 32 threads per row"), std::string::npos) << src;
  EXPECT_EQ(body(src).find("early"), std::string::npos) << src;
}

// Divisions by the reduced count multiply by its reciprocal, as ATen's mean does; a division by a
// row's reduction result (softmax's sum) keeps its per-row reciprocal with a division fallback.
TEST(ReducedCount, DivisionsByNMultiplyByItsReciprocal) {
  const auto m = module_returning("x", "x.mean(-1, keepdim=True) + x.var(-1, keepdim=True)");
  const std::string src = body(kernel_source(m, {torch::randn({64, 1000})}));
  // (Every division by N is a reciprocal's.)
  EXPECT_EQ(tftest::count_occurrences(src, "/ (float)((double)p.cols)"), tftest::count_occurrences(src, "(1.0f / (float)((double)p.cols)"))
      << src;
  EXPECT_NE(src.find("(red0 * (1.0f / (float)((double)p.cols)))"), std::string::npos) << src;
  // The unbiased variance divides by N - 1.
  EXPECT_NE(src.find(" * (1.0f / (float)(fmax((double)p.cols - 1.0, 0.0))))"), std::string::npos) << src;
}

TEST(FewRows, RowFillIsAKnob) {
  EXPECT_EQ(cg::parse_tuning("").row_fill, 1024);
  EXPECT_EQ(cg::parse_tuning("row_fill=0").row_fill, 0);
  EXPECT_THROW(cg::parse_tuning("row_fill=4096"), torchfuse::Error);
}

// Shared block rounds: the reductions one pass accumulates publish their warps' partials, one
// barrier serves them all, and none follows (the slots alternate by row group). Add + layer norm
// takes two rounds (the mean; the deviations' sum and squares), where it took three of two barriers.
TEST(SharedRounds, APassesReductionsShareOneBarrier) {
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 768));
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  const std::vector<c10::IValue> in{b16({1, 128, 768}), b16({1, 128, 768}), b16({768}), b16({768})};
  std::string src = body(kernel_source(add_ln, in));
  EXPECT_EQ(tftest::count_occurrences(src, "__syncthreads();"), 2) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "tf_block_reduce<"), 0) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "tf_block_collect<4>"), 3) << src;
  EXPECT_TRUE(tftest::contains_in_order(src, {"__shared__ float smem_acc0[8];", "unsigned row_it = 0;", ", ++row_it)",
                                              "const int red_half = (int)(row_it & 1u) * 4;",
                                              "tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);", "__syncthreads();",
                                              "tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);",
                                              "tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);", "__syncthreads();",
                                              "tf_block_collect<4>(tf_sum_op(), smem_acc1 + red_half)",
                                              "tf_block_collect<4>(tf_sum_op(), smem_acc2 + red_half)"}))
      << src;
  {
    torchfuse::runtime::ScopedTuning off(cg::parse_tuning("row_shared_rounds=0"));
    src = body(kernel_source(add_ln, in));
    EXPECT_EQ(tftest::count_occurrences(src, "tf_block_reduce<4>("), 3) << src;
    EXPECT_EQ(src.find("row_it"), std::string::npos) << src;
    EXPECT_NE(src.find("__shared__ float smem_acc0[4];"), std::string::npos) << src;
  }
  // Warp teams and clusters reduce as before.
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto softmax = module_returning("x", "torch.softmax(x, -1)");
  src = body(kernel_source(softmax, {torch::randn({64, 256})}));
  EXPECT_NE(src.find("tf_warp_reduce<"), std::string::npos) << src;
  EXPECT_EQ(src.find("tf_block_publish"), std::string::npos) << src;
  src = body(kernel_source(softmax, {torch::randn({4, 65536})}));
  EXPECT_NE(src.find("tf_cluster_reduce<"), std::string::npos) << src;
  EXPECT_EQ(src.find("tf_block_publish"), std::string::npos) << src;
}

// Early loads: inputs only a later pass reads (a layer norm's weight and bias) load with the first
// pass's inputs into registers, within the knob's registers a thread, in input order; inputs the
// first pass reads never do. An f32 layer norm's weight and bias, a bf16 rms norm's weight and,
// in teams of a warp or more, a bf16 layer norm's weight and bias do.
TEST(EarlyLoads, WeightsLoadWithTheFirstPass) {
  const auto add_ln = module_from(tftest::with_row_length(tftest::suite_pattern("add_layernorm").source, 768));
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  const std::vector<c10::IValue> f32_in{torch::randn({1, 128, 768}), torch::randn({1, 128, 768}), torch::randn({768}),
                                        torch::randn({768})};
  std::string src = body(kernel_source(add_ln, f32_in));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<float, 4> early2[1];", "tf_vec<float, 4> early3[1];",
                                              "early2[k] = *reinterpret_cast<const tf_vec<float, 4>*>(in2 + ro2 + j0);",
                                              "early3[k] = *reinterpret_cast<const tf_vec<float, 4>*>(in3 + ro3 + j0);",
                                              "tf_block_publish(acc0", "const tf_vec<float, 4> v2 = early2[k];",
                                              "const tf_vec<float, 4> v3 = early3[k];"}))
      << src;
  EXPECT_EQ(src.find("early0"), std::string::npos) << src;
  EXPECT_EQ(src.find("early1"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "in2 + ro2"), 1) << src;
  const std::vector<c10::IValue> in{b16({1, 128, 768}), b16({1, 128, 768}), b16({768}), b16({768})};
  src = body(kernel_source(add_ln, in));
  EXPECT_TRUE(tftest::contains_in_order(src, {"early2[k] = ", "early3[k] = ", "tf_block_publish(acc0"})) << src;
  {
    torchfuse::runtime::ScopedTuning off(cg::parse_tuning("row_early_loads=0"));
    src = body(kernel_source(add_ln, in));
    EXPECT_EQ(src.find("early"), std::string::npos) << src;
    EXPECT_TRUE(tftest::contains_in_order(src, {"tf_block_publish(acc0", "*reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in2 + ro2 + j0);"}))
        << src;
  }
  const auto rms = module_returning("x, w", "w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))");
  src = body(kernel_source(rms, {b16({128, 4096}), b16({4096})}));
  EXPECT_TRUE(tftest::contains_in_order(src, {"early1[k] = ", "tf_block_publish(acc0", "= early1[k];"})) << src;
  {
    torchfuse::runtime::ScopedTuning off(cg::parse_tuning("row_early_loads=0"));
    src = body(kernel_source(add_ln, f32_in));
    EXPECT_EQ(src.find("early"), std::string::npos) << src;
    EXPECT_TRUE(tftest::contains_in_order(src, {"tf_block_publish(acc0", "*reinterpret_cast<const tf_vec<float, 4>*>(in2 + ro2 + j0);"}))
        << src;
  }
  // Many f32 rows of 4096 keep 8 vectors a thread: a weight takes 32 registers, past the default
  // 16; 32 registers take the weight, 64 the weight and the bias.
  const auto ln = module_from(tftest::with_row_length(tftest::suite_pattern("layernorm_manual").source, 4096));
  const std::vector<c10::IValue> ln_in{torch::randn({4096, 4096}), torch::randn({4096}), torch::randn({4096})};
  torchfuse::runtime::ScopedTuning many(with(""));
  src = kernel_source(ln, ln_in);
  EXPECT_NE(src.find("8 vectors per thread"), std::string::npos) << src;
  EXPECT_EQ(body(src).find("early"), std::string::npos) << src;
  {
    torchfuse::runtime::ScopedTuning one(with("row_early_loads=32"));
    src = body(kernel_source(ln, ln_in));
    EXPECT_NE(src.find("tf_vec<float, 4> early1[8];"), std::string::npos) << src;
    EXPECT_EQ(src.find("early2"), std::string::npos) << src;
  }
  torchfuse::runtime::ScopedTuning both(with("row_early_loads=64"));
  src = body(kernel_source(ln, ln_in));
  EXPECT_TRUE(tftest::contains_in_order(src, {"tf_vec<float, 4> early1[8];", "tf_vec<float, 4> early2[8];"})) << src;
}

TEST(EarlyLoads, KnobsParse) {
  EXPECT_EQ(cg::parse_tuning("").row_early_loads, -1);
  EXPECT_EQ(cg::parse_tuning("row_early_loads=64").row_early_loads, 64);
  EXPECT_THROW(cg::parse_tuning("row_early_loads=65"), torchfuse::Error);
  EXPECT_EQ(cg::parse_tuning("").row_shared_rounds, 1);
  EXPECT_EQ(cg::parse_tuning("row_shared_rounds=0").row_shared_rounds, 0);
  EXPECT_THROW(cg::parse_tuning("row_shared_rounds=2"), torchfuse::Error);
}

// Exact rows: where threads per row x vectors per thread x the vector width is the row length,
// the source takes the length as a constant and its chunks have no bounds check (a row past the
// last reads row 0 and only its stores are guarded); other lengths, and row_exact=0, keep the
// checks and the length as an argument.
TEST(ExactRows, FullTeamsTakeTheirLengthAsAConstant) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)");
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  const std::string guard = "if (row_ok && j0 < (tf_index)p.cols)";
  std::string src = body(compiled(ln, {b16({4096, 64}), b16({64}), b16({64})}));
  EXPECT_EQ(src.find(guard), std::string::npos) << src;
  EXPECT_EQ(src.find("p.cols"), std::string::npos) << src;
  EXPECT_EQ(tftest::count_occurrences(src, "/* every chunk holds columns */ {"), 3) << src;
  EXPECT_TRUE(tftest::contains_in_order(src, {"(red0 * (1.0f / (float)((double)64)))",
                                              "if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)64 + j0)"}))
      << src;
  // A row output is guarded as before; f32 rows of a warp.
  const auto mean = module_returning("x", "x.mean(-1) * 2.0");
  src = body(compiled(mean, {torch::randn({4096, 96})}));
  EXPECT_EQ(src.find(guard), std::string::npos) << src;
  EXPECT_NE(src.find("(double)96"), std::string::npos) << src;
  EXPECT_NE(src.find("if (row_ok && tl == 0) out0[row] = "), std::string::npos) << src;
  // 72 columns are 9 vectors: a team's last chunk holds none in some threads.
  src = body(compiled(ln, {b16({4096, 72}), b16({72}), b16({72})}));
  EXPECT_EQ(tftest::count_occurrences(src, guard), 3) << src;
  EXPECT_NE(src.find("(double)p.cols"), std::string::npos) << src;
  EXPECT_EQ(src.find("every chunk holds columns"), std::string::npos) << src;
  // Looped rows keep their checks; so does every row with the knob off.
  src = body(kernel_source(ln, {torch::randn({64, 65536}), torch::randn({65536}), torch::randn({65536})}));
  EXPECT_EQ(src.find("every chunk holds columns"), std::string::npos) << src;
  torchfuse::runtime::ScopedTuning off(with("row_exact=0"));
  src = body(kernel_source(ln, {b16({4096, 64}), b16({64}), b16({64})}));
  EXPECT_EQ(tftest::count_occurrences(src, guard), 3) << src;
  EXPECT_EQ(src.find("every chunk holds columns"), std::string::npos) << src;
}

TEST(ExactRows, KnobParses) {
  EXPECT_EQ(cg::parse_tuning("").row_exact, 1);
  EXPECT_EQ(cg::parse_tuning("row_exact=0").row_exact, 0);
  EXPECT_THROW(cg::parse_tuning("row_exact=2"), torchfuse::Error);
}

namespace {
std::string team_of(const std::string& src) {
  const auto at = src.find("mode: ");
  return at == std::string::npos ? "" : src.substr(at + 6, src.find(';', at) - at - 6);
}
}  // namespace

// Short rows spread over at least tuning().row_min_threads threads (as far as they have vectors),
// in blocks of tuning().row_team_block.
TEST(ShortRowTeams, AtLeastFourThreadsARow) {
  torchfuse::runtime::ScopedTuning many(with(""));
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)");
  const auto sum = module_returning("x", "x.sum(-1)");
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 64}), b16({64}), b16({64})})),
            "4 threads per row, block 256, vector width 8, 2 vectors per thread (inputs kept as loaded, values recomputed)");
  EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 32}), b16({32}), b16({32})})),
            "4 threads per row, block 256, vector width 8, 1 vectors per thread (inputs kept as loaded, values recomputed)");
  // Rows of 2 vectors take 2 threads; rows read once too; rows of 1024 keep their warp.
  EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 16}), b16({16}), b16({16})})),
            "2 threads per row, block 256, vector width 8, 1 vectors per thread (inputs kept as loaded, values recomputed)");
  EXPECT_EQ(team_of(kernel_source(sum, {torch::randn({4096, 64})})), "4 threads per row, block 256, vector width 4, 4 vectors per thread");
  EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 1024}), b16({1024}), b16({1024})})),
            "32 threads per row, block 256, vector width 8, 4 vectors per thread (inputs kept as loaded, values recomputed)");
  {
    torchfuse::runtime::ScopedTuning old(with("row_min_threads=1"));
    EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 64}), b16({64}), b16({64})})),
              "2 threads per row, block 256, vector width 8, 4 vectors per thread (inputs kept as loaded, values recomputed)");
    EXPECT_EQ(team_of(kernel_source(sum, {torch::randn({4096, 64})})), "2 threads per row, block 256, vector width 4, 8 vectors per thread");
  }
  torchfuse::runtime::ScopedTuning blocks(with("row_team_block=64"));
  const std::string src = compiled(ln, {b16({4096, 64}), b16({64}), b16({64})});
  EXPECT_EQ(team_of(src),
            "4 threads per row, block 64, vector width 8, 2 vectors per thread (inputs kept as loaded, values recomputed)");
  EXPECT_NE(src.find("__launch_bounds__(64)"), std::string::npos) << src;
  EXPECT_NE(src.find("(tf_index)blockIdx.x * 16;"), std::string::npos) << src;
  // Block-wide teams keep their own block.
  EXPECT_EQ(team_of(kernel_source(module_returning("x", "torch.softmax(x, -1)"), {b16({4096, 1024})})),
            "64 threads per row, block 64, vector width 8, 2 vectors per thread");
}

// Knob values that are not powers of two round up to one: a team's shuffles take a power-of-two
// width (a team of 3 would shuffle with the next row's lanes).
TEST(ShortRowTeams, TeamsArePowersOfTwo) {
  const auto ln = module_returning("x, w, b", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)");
  const auto b16 = [](std::vector<int64_t> s) { return torch::randn(s).to(c10::kBFloat16); };
  {
    torchfuse::runtime::ScopedTuning three(with("row_min_threads=3"));
    EXPECT_EQ(team_of(kernel_source(ln, {b16({4096, 64}), b16({64}), b16({64})})),
              "4 threads per row, block 256, vector width 8, 2 vectors per thread (inputs kept as loaded, values recomputed)");
  }
  for (const char* knobs : {"row_team=100", "row_team=20", "row_min_threads=5"}) {
    SCOPED_TRACE(knobs);
    torchfuse::runtime::ScopedTuning odd(with(knobs));
    for (int64_t cols : {64, 200, 1024, 4096}) {
      const std::string team = team_of(kernel_source(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({512, cols})}));
      const int threads = std::stoi(team);
      EXPECT_EQ(threads & (threads - 1), 0) << cols << ": " << team;
    }
  }
}

TEST(ShortRowTeams, KnobsParse) {
  EXPECT_EQ(cg::parse_tuning("").row_min_threads, 4);
  EXPECT_EQ(cg::parse_tuning("").row_team_block, 256);
  EXPECT_EQ(cg::parse_tuning("row_min_threads=8").row_min_threads, 8);
  EXPECT_EQ(cg::parse_tuning("row_team_block=32").row_team_block, 32);
  EXPECT_THROW(cg::parse_tuning("row_min_threads=0"), torchfuse::Error);
  EXPECT_THROW(cg::parse_tuning("row_team_block=48"), torchfuse::Error);
  EXPECT_THROW(cg::parse_tuning("row_team_block=512"), torchfuse::Error);
}
