// Recorded launches (runtime/launch_record.h) without a GPU: which argument words a record
// patches, and which calls it refuses. Host tensors stand in for a call's inputs and outputs (the
// recorder reads their storages and pointers only); the launch itself is reported by hand, as
// runtime::launch reports it. The GPU side (repeats against eager) is test_launch_record_gpu.cpp.
#include "runtime/launch_record.h"
#include "runtime/launch_util.h"
#include "tests/test_util.h"

namespace {

namespace rt = torchfuse::runtime;

int64_t word(const void* p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

const c10::Device kGpu(c10::DeviceType::CUDA, 0);

// A launch of words {128, a pointer into x 16 bytes in, 7, y's pointer, out's pointer, null}.
// `shared`: y is x transposed (one storage for both inputs).
struct Call {
  at::Tensor x = torch::randn({16, 16});
  at::Tensor y;
  at::Tensor out = torch::empty({16, 16});
  std::vector<c10::IValue> inputs;
  rt::ParamPacker params;
  explicit Call(bool shared = false) : y(shared ? x.t() : torch::randn({16, 32}).narrow(1, 4, 16)), inputs{x, y} {
    params.i64(128);
    params.ptr(static_cast<char*>(x.data_ptr()) + 16);
    params.i64(7);
    params.ptr(y.data_ptr());
    params.ptr(out.data_ptr());
    params.ptr(nullptr);
  }
  void report(rt::LaunchRecorder& r) {
    r.launched(nullptr, 3, 2, 128, 64, static_cast<const int64_t*>(params.data()), params.size(),
               params.pointer_words().data(), params.pointer_words().size(), /*grid_dependency=*/true);
  }
};

TEST(LaunchRecords, PointersPatchedFromTheirInputOrOutput) {
  Call call;
  std::unique_ptr<rt::LaunchRecord> r;
  {
    rt::LaunchRecorder recorder;
    EXPECT_EQ(rt::LaunchRecorder::current(), &recorder);
    call.report(recorder);
    r = recorder.finish(rt::CallGeometry(), call.inputs.data(), 2, {call.out}, kGpu);
  }
  EXPECT_EQ(rt::LaunchRecorder::current(), nullptr);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->grid_x, 3u);
  EXPECT_EQ(r->grid_y, 2u);
  EXPECT_EQ(r->block, 128u);
  EXPECT_EQ(r->shared_bytes, 64u);
  EXPECT_TRUE(r->grid_dependency) << "the kernel's mark, for programmatic dependent launch on replay";
  ASSERT_EQ(r->params.size(), 6u);
  EXPECT_EQ(r->params[0], 128);
  EXPECT_EQ(r->params[2], 7);
  // Word 5 (a null pointer) is left as it is.
  ASSERT_EQ(r->pointers.size(), 3u);
  EXPECT_EQ(r->pointers[0].word, 1);
  EXPECT_EQ(r->pointers[0].input, 0);
  EXPECT_EQ(r->pointers[0].output, -1);
  EXPECT_EQ(r->pointers[0].delta, 16);
  EXPECT_EQ(r->pointers[1].word, 3);
  EXPECT_EQ(r->pointers[1].input, 1);
  EXPECT_EQ(r->pointers[1].delta, 0);
  EXPECT_EQ(r->pointers[2].word, 4);
  EXPECT_EQ(r->pointers[2].input, -1);
  EXPECT_EQ(r->pointers[2].output, 0);
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].sizes, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(r->outputs[0].dtype, c10::ScalarType::Float);
}

TEST(LaunchRecords, CallsThatCannotRepeatAreRefused) {
  const auto finish = [](Call& call, rt::LaunchRecorder& recorder, std::vector<at::Tensor> outputs) {
    return recorder.finish(rt::CallGeometry(), call.inputs.data(), call.inputs.size(), outputs, kGpu);
  };
  {
    Call call;
    rt::LaunchRecorder none;
    EXPECT_EQ(finish(call, none, {call.out}), nullptr) << "no launch";
  }
  {
    Call call;
    rt::LaunchRecorder two;
    call.report(two);
    call.report(two);
    EXPECT_EQ(finish(call, two, {call.out}), nullptr) << "two launches";
  }
  {
    Call call;
    rt::LaunchRecorder refused;
    call.report(refused);
    refused.refuse();  // a clustered or cooperative launch
    EXPECT_EQ(finish(call, refused, {call.out}), nullptr) << "refused";
  }
  {
    Call call;
    const at::Tensor partials = torch::empty({64});
    call.params.ptr(partials.data_ptr());
    rt::LaunchRecorder other;
    call.report(other);
    EXPECT_EQ(finish(call, other, {call.out}), nullptr) << "a pointer neither an input's nor an output's";
  }
  {
    Call call(/*shared=*/true);  // x's pointer could come from either input
    rt::LaunchRecorder shared;
    call.report(shared);
    EXPECT_EQ(finish(call, shared, {call.out}), nullptr) << "inputs sharing a storage";
  }
  {
    Call call;
    rt::LaunchRecorder strided;
    call.report(strided);
    EXPECT_EQ(finish(call, strided, {call.out.t()}), nullptr) << "a non-contiguous output";
  }
}

TEST(LaunchRecords, GeometriesOfGpuTensorsOnly) {
  rt::CallGeometry g;
  const std::vector<c10::IValue> host = {torch::randn({4, 4})};
  EXPECT_FALSE(g.take(host.data(), host.size()));
  const std::vector<c10::IValue> number = {c10::IValue(2.0)};
  EXPECT_FALSE(g.take(number.data(), number.size()));
}

TEST(LaunchRecords, RefusedTriesStopTheRecording) {
  rt::LaunchRecords records;
  EXPECT_FALSE(records.any());
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(records.wants_more()) << i;
    records.add(nullptr);
  }
  EXPECT_FALSE(records.wants_more());
  EXPECT_FALSE(records.any());
}

TEST(LaunchRecords, OnByDefault) { EXPECT_TRUE(torchfuse::CompileOptions{}.record_launches); }

}  // namespace
