// Tests for runtime/disk_cache: round trips, misses, corruption handling, key-collision guard,
// default directory selection, atomicity under concurrent threads and processes, and unwritable
// (read-only, full) directories; and the kernel cache's key over it (runtime/kernel_cache): the
// same kernel from a differently numbered graph is a disk hit. No GPU needed.
#include "runtime/disk_cache.h"

#include <cstdlib>
#include <cstring>

#include <atomic>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "runtime/kernel_cache.h"
#include "tests/fs_util.h"
#include "tests/test_util.h"

namespace {

using torchfuse::runtime::digest_hex;
using torchfuse::runtime::DiskCache;
using torchfuse::runtime::sha256_hex;

using tftest::TempDir;

// Sets (or unsets, with nullptr) an environment variable and restores it on scope exit.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    set(value);
  }
  ~EnvGuard() { set(had_ ? old_.c_str() : nullptr); }
  void set(const char* value) {
    if (value) {
      ::setenv(name_, value, 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Names in `dir` other than "." and "..".
std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

// A recognisable binary payload: `size` bytes derived from `tag`, with embedded NULs.
std::string make_payload(int tag, size_t size) {
  std::string p(size, '\0');
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<char>((i * 131 + tag * 17) & 0xff);
  return p;
}

TEST(DigestTest, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(DigestTest, DigestIs128BitPrefixAndStable) {
  std::string d = digest_hex("hello");
  EXPECT_EQ(d.size(), 32u);
  EXPECT_EQ(d, sha256_hex("hello").substr(0, 32));
  EXPECT_EQ(d, digest_hex("hello"));
  EXPECT_NE(d, digest_hex("hellp"));
  // Every padding boundary (55/56/63/64 bytes) yields distinct, well-formed digests.
  std::set<std::string> seen;
  for (size_t n = 0; n < 130; ++n) seen.insert(digest_hex(std::string(n, 'x')));
  EXPECT_EQ(seen.size(), 130u);
}

TEST(DiskCacheTest, StoreLoadRoundTrip) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.enabled());
  std::string payload = make_payload(1, 4096);
  ASSERT_TRUE(cache.store("kernel-a", payload));
  auto got = cache.load("kernel-a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, payload);
  // Empty key and empty payload are legal.
  ASSERT_TRUE(cache.store("", ""));
  auto empty = cache.load("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, "");
  // Overwriting replaces the payload.
  ASSERT_TRUE(cache.store("kernel-a", "v2"));
  EXPECT_EQ(cache.load("kernel-a").value_or("?"), "v2");
  auto c = cache.counters();
  EXPECT_EQ(c.hits, 3);
  EXPECT_EQ(c.misses, 0);
  EXPECT_EQ(c.stores, 3);
  EXPECT_EQ(c.store_failures, 0);
  EXPECT_EQ(c.corrupt, 0);
}

TEST(DiskCacheTest, SecondInstanceSeesEntries) {
  TempDir tmp;
  ASSERT_TRUE(DiskCache(tmp.path()).store("k", "cubin bytes"));
  DiskCache other(tmp.path() + "/");  // trailing slash is normalised
  EXPECT_EQ(other.dir(), tmp.path());
  EXPECT_EQ(other.load("k").value_or("?"), "cubin bytes");
}

TEST(DiskCacheTest, MissOnAbsentKey) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  EXPECT_FALSE(cache.load("nothing").has_value());
  ASSERT_TRUE(cache.store("something", "x"));
  EXPECT_FALSE(cache.load("nothing").has_value());
  auto c = cache.counters();
  EXPECT_EQ(c.misses, 2);
  EXPECT_EQ(c.hits, 0);
  EXPECT_EQ(c.corrupt, 0);
}

TEST(DiskCacheTest, DisabledCacheDoesNothing) {
  DiskCache cache("");
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.dir(), "");
  EXPECT_EQ(cache.path_for("k"), "");
  EXPECT_FALSE(cache.store("k", "v"));
  EXPECT_FALSE(cache.load("k").has_value());
  auto c = cache.counters();
  EXPECT_EQ(c.hits + c.misses + c.corrupt + c.stores + c.store_failures, 0);
}

TEST(DiskCacheTest, CreatesDirectoryRecursivelyWithMode0700) {
  TempDir tmp;
  std::string dir = tmp.path() + "/a/b//c";
  DiskCache cache(dir);
  ASSERT_TRUE(cache.store("k", "v"));
  for (const std::string& d : {tmp.path() + "/a", tmp.path() + "/a/b", tmp.path() + "/a/b/c"}) {
    struct stat st;
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
  EXPECT_EQ(cache.load("k").value_or("?"), "v");
}

TEST(DiskCacheTest, NoTempFilesLeftBehind) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache.store("k" + std::to_string(i), "v"));
  ASSERT_TRUE(cache.store("k0", "again"));
  auto names = list_dir(tmp.path());
  EXPECT_EQ(names.size(), 5u);
  for (const auto& n : names) EXPECT_NE(n[0], '.') << n;  // temp files start with ".tmp-"
}

TEST(DiskCacheTest, StoreFailureIsReportedNotThrown) {
  TempDir tmp;
  std::string file = tmp.path() + "/not_a_dir";
  write_file(file, "x");
  DiskCache cache(file + "/cache");  // a regular file in the path: mkdir must fail
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store("k", "v"));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("cannot write the kernel cache in " + file + "/cache (mkdir "), std::string::npos) << log;
  EXPECT_FALSE(cache.load("k").has_value());
  auto c = cache.counters();
  EXPECT_EQ(c.store_failures, 1);
  EXPECT_EQ(c.stores, 0);
  EXPECT_EQ(c.misses, 1);
}

int count_occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// A directory this process cannot write: the first store fails and warns once, naming the
// directory and the error; later stores touch nothing and do not warn again; loads still answer.
TEST(DiskCacheTest, ReadOnlyDirectoryStopsStoringWithOneWarning) {
  TempDir tmp;
  const std::string dir = tftest::unwritable_dir(tmp.path());
  DiskCache cache(dir);
  ASSERT_TRUE(cache.storing());
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store("k1", "v1"));
  EXPECT_FALSE(cache.store("k2", "v2"));
  EXPECT_FALSE(cache.load("k1").has_value());
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_occurrences(log, "cannot write the kernel cache in " + dir + " ("), 1) << log;
  EXPECT_EQ(count_occurrences(log, "cannot write the kernel cache"), 1) << log;
  EXPECT_FALSE(cache.storing());
  EXPECT_NE(cache.store_error().find("open " + dir + "/.tmp-"), std::string::npos) << cache.store_error();
  const auto c = cache.counters();
  EXPECT_EQ(c.stores, 0);
  EXPECT_EQ(c.store_failures, 2);
  EXPECT_EQ(c.misses, 1);
  if (dir != "/proc/self") EXPECT_TRUE(list_dir(dir).empty());
}

// A full file system (write(2) answers ENOSPC): one warning with the system's message, no temp
// file left, no further stores; what was stored before still loads.
TEST(DiskCacheTest, FullDiskStopsStoringWithOneWarningAndStillServesEntries) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("before", "stored while there was room"));
  cache.set_write_for_testing(&tftest::full_disk_write);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store("k1", make_payload(1, 4096)));
  EXPECT_FALSE(cache.store("k2", "v2"));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_occurrences(log, "cannot write the kernel cache in " + tmp.path()), 1) << log;
  EXPECT_NE(log.find(std::strerror(ENOSPC)), std::string::npos) << log;
  EXPECT_NE(cache.store_error().find("write " + tmp.path() + "/.tmp-"), std::string::npos) << cache.store_error();
  EXPECT_EQ(cache.load("before").value_or("?"), "stored while there was room");
  EXPECT_FALSE(cache.load("k1").has_value());
  EXPECT_EQ(list_dir(tmp.path()).size(), 1u);  // the failed store's temp file is gone
  const auto c = cache.counters();
  EXPECT_EQ(c.stores, 1);
  EXPECT_EQ(c.store_failures, 2);
  EXPECT_EQ(c.hits, 1);
}

TEST(DiskCacheTest, TruncatedEntryIsCorruptRemovedAndReplaced) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const std::string payload = "small cubin payload";
  ASSERT_TRUE(cache.store("k", payload));
  const std::string path = cache.path_for("k");
  const std::string full = read_file(path);
  ASSERT_GT(full.size(), payload.size());
  // Every possible truncation (including an empty file) must be detected.
  int64_t expected_corrupt = 0;
  for (size_t len = 0; len < full.size(); ++len) {
    write_file(path, full.substr(0, len));
    EXPECT_FALSE(cache.load("k").has_value()) << "len " << len;
    EXPECT_EQ(cache.counters().corrupt, ++expected_corrupt);
    EXPECT_FALSE(exists(path)) << "corrupt entry not removed, len " << len;
  }
  ASSERT_TRUE(cache.store("k", payload));
  EXPECT_EQ(cache.load("k").value_or("?"), payload);
}

TEST(DiskCacheTest, FlippedPayloadByteIsDetected) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const std::string payload = make_payload(3, 1024);
  ASSERT_TRUE(cache.store("k", payload));
  const std::string path = cache.path_for("k");
  std::string bytes = read_file(path);
  size_t payload_start = bytes.find(payload);
  ASSERT_NE(payload_start, std::string::npos);
  bytes[payload_start + 500] ^= 0x01;
  write_file(path, bytes);
  EXPECT_FALSE(cache.load("k").has_value());
  EXPECT_EQ(cache.counters().corrupt, 1);
  EXPECT_FALSE(exists(path));
}

TEST(DiskCacheTest, EveryFlippedByteIsDetected) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("key", "payload"));
  const std::string path = cache.path_for("key");
  const std::string good = read_file(path);
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      std::string k, p;
      EXPECT_EQ(DiskCache::decode_entry(bad, &k, &p), DiskCache::DecodeStatus::Corrupt)
          << "byte " << i << " mask " << int(mask);
    }
  }
  // Trailing garbage after a valid entry is also rejected.
  std::string k, p;
  EXPECT_EQ(DiskCache::decode_entry(good + "x", &k, &p), DiskCache::DecodeStatus::Corrupt);
  EXPECT_EQ(DiskCache::decode_entry(good, &k, &p), DiskCache::DecodeStatus::Ok);
  EXPECT_EQ(k, "key");
  EXPECT_EQ(p, "payload");
}

TEST(DiskCacheTest, KeyMismatchUnderSameFileNameIsMiss) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  // Simulate a digest collision: B's valid entry sits at A's file name.
  ASSERT_TRUE(cache.store("key-B", "payload-B"));
  ASSERT_EQ(::rename(cache.path_for("key-B").c_str(), cache.path_for("key-A").c_str()), 0);
  EXPECT_FALSE(cache.load("key-A").has_value());
  auto c = cache.counters();
  EXPECT_EQ(c.misses, 1);
  EXPECT_EQ(c.corrupt, 0);  // a valid entry of another key is not corruption...
  EXPECT_TRUE(exists(cache.path_for("key-A")));  // ...so it is kept
  // Storing A replaces it.
  ASSERT_TRUE(cache.store("key-A", "payload-A"));
  EXPECT_EQ(cache.load("key-A").value_or("?"), "payload-A");
}

TEST(DiskCacheTest, ForgedEntryWithOtherKeyIsMiss) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("key-A", "placeholder"));  // creates the directory
  write_file(cache.path_for("key-A"), DiskCache::encode_entry("key-B", "payload-B"));
  EXPECT_FALSE(cache.load("key-A").has_value());
  EXPECT_EQ(cache.counters().corrupt, 0);
}

TEST(DiskCacheTest, DefaultDirHonoursEnvironment) {
  EnvGuard tf("TORCHFUSE_CACHE_DIR", "/some/where/cache");
  EnvGuard xdg("XDG_CACHE_HOME", "/xdg");
  EnvGuard home("HOME", "/home/someone");
  EXPECT_EQ(DiskCache::default_dir(), "/some/where/cache");
  for (const char* off : {"off", "OFF", "0", ""}) {
    tf.set(off);
    EXPECT_EQ(DiskCache::default_dir(), "") << "'" << off << "'";
    EXPECT_FALSE(DiskCache(DiskCache::default_dir()).enabled());
  }
  tf.set(nullptr);
  EXPECT_EQ(DiskCache::default_dir(), "/xdg/torchfuse");
  xdg.set(nullptr);
  EXPECT_EQ(DiskCache::default_dir(), "/home/someone/.cache/torchfuse");
  xdg.set("relative/path");  // invalid per the XDG spec: ignored
  EXPECT_EQ(DiskCache::default_dir(), "/home/someone/.cache/torchfuse");
  xdg.set(nullptr);
  home.set(nullptr);
  EXPECT_EQ(DiskCache::default_dir(), "");
}

TEST(DiskCacheTest, ConcurrentThreadsNeverSeeWrongPayload) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  constexpr int kThreads = 8;
  constexpr int kIters = 40;
  std::vector<std::string> payloads;
  for (int t = 0; t < kThreads; ++t) payloads.push_back(make_payload(t, 256 * 1024 + t));
  std::atomic<int> wrong{0}, hits{0}, failed_stores{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        if (!cache.store("shared-key", payloads[t])) ++failed_stores;
        auto got = cache.load("shared-key");
        if (!got) continue;
        ++hits;
        bool known = false;
        for (const auto& p : payloads) known = known || *got == p;
        if (!known) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(failed_stores.load(), 0);
  EXPECT_EQ(hits.load(), kThreads * kIters);  // the entry always exists once stored
  auto c = cache.counters();
  EXPECT_EQ(c.corrupt, 0);
  EXPECT_EQ(c.stores, kThreads * kIters);
  EXPECT_EQ(c.hits, kThreads * kIters);
  EXPECT_EQ(list_dir(tmp.path()).size(), 1u);  // no temp files left
}

// Stores its own payload and loads the shared key `iters` times; returns the number of loads
// that came back with something other than one of the two valid payloads (or missing).
int hammer(const std::string& dir, const std::string& mine, const std::string& a,
           const std::string& b, int iters) {
  DiskCache cache(dir);
  int bad = 0;
  for (int i = 0; i < iters; ++i) {
    if (!cache.store("fork-key", mine)) ++bad;
    auto got = cache.load("fork-key");
    if (!got || (*got != a && *got != b)) ++bad;
  }
  return bad + static_cast<int>(cache.counters().corrupt);
}

TEST(DiskCacheTest, ForkedProcessesNeverReadPartialFile) {
  TempDir tmp;
  const std::string parent_payload = make_payload(11, 512 * 1024);
  const std::string child_payload = make_payload(12, 512 * 1024 + 7);
  constexpr int kIters = 100;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int bad = hammer(tmp.path(), child_payload, parent_payload, child_payload, kIters);
    ::_exit(bad == 0 ? 0 : 1);  // never return into GoogleTest from the child
  }
  int bad = hammer(tmp.path(), parent_payload, parent_payload, child_payload, kIters);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child saw a wrong or partial entry";
  EXPECT_EQ(bad, 0) << "parent saw a wrong or partial entry";
  auto got = DiskCache(tmp.path()).load("fork-key");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == parent_payload || *got == child_payload);
  EXPECT_EQ(list_dir(tmp.path()).size(), 1u);
}

// ---- the kernel cache's key: what the kernel is ----

// The softmax group's kernel, alone and behind an unrelated group and a matmul (other IR value
// ids and group id in its comments), and another kernel (another constant).
struct SoftmaxKernels {
  torchfuse::codegen::GeneratedKernel alone, behind, other;
};

torchfuse::codegen::GeneratedKernel only_kernel(const torchfuse::Explanation& e, const std::string& description) {
  torchfuse::codegen::GeneratedKernel k;
  for (const auto& info : e.kernels) {
    if (info.description != description) continue;
    k.name = info.name;
    k.source = info.source;
  }
  EXPECT_FALSE(k.name.empty()) << "no kernel computes " << description << "\n" << e.ir_after;
  return k;
}

SoftmaxKernels softmax_kernels() {
  const auto x = torch::randn({4, 8, 256});
  const auto m = torch::randn({1, 1, 256});
  const auto alone = torchfuse::compile(tftest::module_returning("x, m", "torch.softmax(x * 0.125 + m, -1)"))
                         .explain({x, m});
  const auto behind = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, w, x, m):
    u = torch.tanh(w) * 3.0 + w
    v = torch.matmul(u, u)
    return torch.softmax(x * 0.125 + m, -1), v
)JIT")).explain({torch::randn({16, 16}), x, m});
  const auto other = torchfuse::compile(tftest::module_returning("x, m", "torch.softmax(x * 0.25 + m, -1)"))
                         .explain({x, m});
  const std::string ops = alone.kernels.at(0).description;
  return {only_kernel(alone, ops), only_kernel(behind, ops), only_kernel(other, ops)};
}

TEST(KernelCacheKey, IsTheKernelNotTheGraphsNumbering) {
  namespace rt = torchfuse::runtime;
  const SoftmaxKernels k = softmax_kernels();
  ASSERT_NE(k.alone.source, k.behind.source);  // the comments differ
  EXPECT_EQ(k.alone.name, k.behind.name);
  // (Keys hold whole sources: compared, not printed.)
  EXPECT_TRUE(rt::KernelCache::key(k.alone, "sm_90") == rt::KernelCache::key(k.behind, "sm_90"));
  EXPECT_TRUE(rt::KernelCache::key(k.alone, "sm_90") != rt::KernelCache::key(k.alone, "sm_80"));
  EXPECT_NE(k.alone.name, k.other.name);
  EXPECT_TRUE(rt::KernelCache::key(k.alone, "sm_90") != rt::KernelCache::key(k.other, "sm_90"));
}

// A kernel cache that never saw the kernel in memory (another process, here another instance)
// finds the one the first compiled from the other graph on disk; another kernel compiles.
TEST(KernelCacheKey, SameKernelFromAnotherGraphIsADiskHit) {
  namespace rt = torchfuse::runtime;
  const SoftmaxKernels k = softmax_kernels();
  TempDir tmp;
  {
    rt::KernelCache first(tmp.path());
    rt::CompileCounters c;
    ASSERT_GT(first.cubin(k.alone, "sm_90", &c)->size(), 0u);
    EXPECT_EQ(c.nvrtc_compiles, 1);
    EXPECT_EQ(c.disk_misses, 1);
  }
  rt::KernelCache second(tmp.path());
  rt::CompileCounters c;
  EXPECT_GT(second.cubin(k.behind, "sm_90", &c)->size(), 0u);
  EXPECT_EQ(c.disk_hits, 1);
  EXPECT_EQ(c.nvrtc_compiles, 0);
  rt::CompileCounters other;
  second.cubin(k.other, "sm_90", &other);
  EXPECT_EQ(other.disk_hits, 0);
  EXPECT_EQ(other.nvrtc_compiles, 1);
}

}  // namespace
