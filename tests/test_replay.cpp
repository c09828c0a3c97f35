// Replay guard on generated code: the kernels torchfuse generates for the graphs of
// tests/replay_cases.h, for sm_80 and sm_90, in float32 and bfloat16, must equal the corpus kept
// in tests/replay/. A change to the emitters, the planners or the knobs' defaults that changes
// a kernel fails here until the corpus is regenerated (scripts/update_replay.sh), so that the
// change shows as a reviewed diff of the corpus in its commit. The prelude every kernel starts
// with is kept once, in tests/replay/prelude.cu.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/replay_cases.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;

const char* const kArchs[] = {"sm_80", "sm_90"};
const c10::ScalarType kDtypes[] = {c10::kFloat, c10::kBFloat16};

bool updating() {
  const char* v = std::getenv("TORCHFUSE_REPLAY_UPDATE");
  return v && std::string(v) == "1";
}

std::string dtype_name(c10::ScalarType t) { return t == c10::kFloat ? "f32" : "bf16"; }

std::string corpus_path(const std::string& name, c10::ScalarType dtype) {
  return std::string(TORCHFUSE_REPLAY_DIR) + "/" + name + "." + dtype_name(dtype) + ".cu";
}

const char kPreludeEnd[] = "// ---- end of prelude ----\n";

std::string prelude_path() { return std::string(TORCHFUSE_REPLAY_DIR) + "/prelude.cu"; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A kernel's source without the prelude, which must be the corpus's (or, when updating, becomes it).
std::string without_prelude(const std::string& source) {
  const size_t end = source.find(kPreludeEnd);
  if (end == std::string::npos) return source;
  const std::string prelude = source.substr(0, end + sizeof(kPreludeEnd) - 1);
  if (updating()) {
    std::ofstream(prelude_path(), std::ios::binary) << prelude;
  } else {
    EXPECT_TRUE(prelude == read_file(prelude_path()))
        << "the kernels' prelude differs from " << prelude_path() << " (scripts/update_replay.sh regenerates it)";
  }
  return "// <prelude.cu>\n" + source.substr(end + sizeof(kPreludeEnd) - 1);
}

std::string describe_inputs(const std::vector<c10::IValue>& in) {
  std::ostringstream s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) s << ", ";
    if (!in[i].isTensor()) {
      s << in[i].tagKind();
      continue;
    }
    const at::Tensor& t = in[i].toTensor();
    s << t.sizes() << " strides " << t.strides();
  }
  return s.str();
}

// The corpus text of one case and dtype: every kernel per architecture, in group order.
std::string generate(const tftest::ReplayCase& rc, c10::ScalarType dtype) {
  const auto in = rc.inputs(dtype);
  std::string text = "// torchfuse replay corpus (tests/test_replay.cpp): " + rc.name + ", " + dtype_name(dtype) +
                     "\n// inputs: " + describe_inputs(in) + "\n// regenerate with scripts/update_replay.sh\n";
  std::vector<std::string> first;
  for (const char* arch : kArchs) {
    auto options = tftest::quiet_options();
    options.offline_arch = arch;
    const auto e = torchfuse::compile(tftest::module_from(rc.source), options).explain(in);
    std::vector<std::string> sources;
    for (const auto& k : e.kernels) sources.push_back(without_prelude(k.source));
    if (!first.empty() && sources == first) {
      text += "// ==== " + std::string(arch) + ": the same kernels as " + kArchs[0] + "\n";
      continue;
    }
    if (first.empty()) first = sources;
    if (e.kernels.empty()) text += "// ==== " + std::string(arch) + ": no kernels\n";
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      text += "// ==== " + std::string(arch) + ": " + k.name + " (" + k.description + ")\n" + sources[i];
      if (sources[i].empty() || sources[i].back() != '\n') text += "\n";
    }
  }
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

// Where two texts first differ, with a few lines around it.
std::string first_difference(const std::string& expected, const std::string& actual) {
  const auto e = lines_of(expected), a = lines_of(actual);
  size_t i = 0;
  while (i < e.size() && i < a.size() && e[i] == a[i]) ++i;
  std::ostringstream s;
  s << "first difference at line " << i + 1 << " (corpus has " << e.size() << " lines, generated " << a.size() << ")\n";
  for (size_t k = i >= 3 ? i - 3 : 0; k < i; ++k) s << "  " << e[k] << "\n";
  s << "- " << (i < e.size() ? e[i] : "<end>") << "\n+ " << (i < a.size() ? a[i] : "<end>") << "\n";
  return s.str();
}

class Replay : public ::testing::TestWithParam<tftest::ReplayCase> {};

TEST_P(Replay, GeneratedKernelsMatchTheCorpus) {
  const auto& rc = GetParam();
  for (c10::ScalarType dtype : kDtypes) {
    const std::string path = corpus_path(rc.name, dtype);
    const std::string actual = generate(rc, dtype);
    if (updating()) {
      std::ofstream(path, std::ios::binary) << actual;
      continue;
    }
    const std::string expected = read_file(path);
    ASSERT_FALSE(expected.empty()) << path << " is missing or empty: run scripts/update_replay.sh";
    EXPECT_TRUE(expected == actual) << rc.name << " " << dtype_name(dtype) << ": the generated kernels differ from "
                                    << path << "; if the change is intended, run scripts/update_replay.sh and review "
                                    << "the diff\n" << first_difference(expected, actual);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Replay, ::testing::ValuesIn(tftest::replay_cases()),
                         [](const auto& info) { return info.param.name; });

// Every corpus file belongs to a case (a renamed or removed case leaves no stale file behind).
TEST(ReplayCorpus, HasNoStaleFiles) {
  std::set<std::string> expected;
  for (const auto& rc : tftest::replay_cases())
    for (c10::ScalarType dtype : kDtypes) expected.insert(fs::path(corpus_path(rc.name, dtype)).filename().string());
  expected.insert("prelude.cu");
  std::vector<std::string> stale;
  for (const auto& entry : fs::directory_iterator(TORCHFUSE_REPLAY_DIR)) {
    const std::string name = entry.path().filename().string();
    if (!expected.count(name)) stale.push_back(name);
  }
  if (updating()) {
    for (const auto& name : stale) fs::remove(fs::path(TORCHFUSE_REPLAY_DIR) / name);
    return;
  }
  EXPECT_TRUE(stale.empty()) << "stale corpus file(s), first: " << (stale.empty() ? "" : stale[0])
                             << " (scripts/update_replay.sh removes them)";
}

}  // namespace
