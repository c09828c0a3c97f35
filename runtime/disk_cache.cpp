// On-disk cubin cache: see disk_cache.h for the layout, the entry format and the guarantees.
#include "runtime/disk_cache.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <array>
#include <atomic>
#include <functional>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "src/logging.h"

namespace torchfuse::runtime {
namespace {

// ---------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), small and self-contained so digests are stable everywhere.
// ---------------------------------------------------------------------------------------------

constexpr std::array<uint32_t, 64> kSha256K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// Mixes one 64-byte block into the hash state.
void sha256_block(std::array<uint32_t, 8>& h, const unsigned char* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16) |
           (uint32_t(block[4 * i + 2]) << 8) | uint32_t(block[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                  kSha256K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

// The 32-byte SHA-256 digest of `bytes`.
std::array<unsigned char, 32> sha256(const std::string& bytes) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  size_t full = n / 64 * 64;
  for (size_t off = 0; off < full; off += 64) sha256_block(h, data + off);
  // Padding: 0x80, zeros, then the bit length as a big-endian u64; one or two final blocks.
  unsigned char tail[128] = {};
  size_t rest = n - full;
  std::memcpy(tail, data + full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t off = 0; off < tail_len; off += 64) sha256_block(h, tail + off);
  std::array<unsigned char, 32> out{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<unsigned char>(h[i] >> (24 - 8 * j));
  }
  return out;
}

std::string to_hex(const unsigned char* bytes, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Entry encoding helpers (explicit little-endian so files are portable across hosts).
// ---------------------------------------------------------------------------------------------

constexpr char kMagic[8] = {'T', 'F', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 4;  // magic + version
constexpr size_t kChecksumSize = 8;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const std::string& in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  return v;
}

// Reads a u64 length at `*pos`, then that many bytes into `*out`; false if it runs past `end`.
bool read_chunk(const std::string& in, size_t* pos, size_t end, std::string* out) {
  if (end - *pos < 8) return false;
  uint64_t len = get_le(in, *pos, 8);
  *pos += 8;
  if (len > end - *pos) return false;
  out->assign(in, *pos, static_cast<size_t>(len));
  *pos += static_cast<size_t>(len);
  return true;
}

// ---------------------------------------------------------------------------------------------
// POSIX file helpers. All return false/empty on error and never throw.
// ---------------------------------------------------------------------------------------------

// Closes an fd on scope exit (so every early return releases it).
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads `fd` to EOF into `*out`, retrying on EINTR.
bool read_all(int fd, std::string* out) {
  out->clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) return true;
    out->append(buf, static_cast<size_t>(r));
  }
}

// Writes all of `data` to `fd` with `write_fn`, handling short writes and EINTR. A write of 0
// bytes sets errno to EIO, so that the caller can always report an error.
bool write_all(DiskCache::WriteFn write_fn, int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = write_fn(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = EIO;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

// "<call> <path>: <strerror(errno)>", for the warning of a failed store.
std::string describe_failure(const char* call, const std::string& path) {
  const int err = errno;
  return std::string(call) + " " + path + ": " + std::strerror(err);
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p with mode 0700 for every directory it creates. Races with other creators are fine:
// EEXIST is accepted as long as the path ends up being a directory.
bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  if (is_dir(dir)) return true;
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (prefix.back() == '/') continue;  // repeated slashes
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return is_dir(dir);
}

// Best-effort fsync of a directory, so the rename itself survives a crash.
void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// A temp-file name unique across processes (pid), threads (thread id) and calls (counter).
std::string temp_path(const std::string& dir, const std::string& final_name) {
  static std::atomic<uint64_t> counter{0};
  size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return dir + "/.tmp-" + final_name + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(tid) + "-" + std::to_string(counter.fetch_add(1));
}

// Removes `path` only if it is still the file we read (same device and inode), so a fresh entry
// renamed in by another writer since our read is not deleted by mistake.
void remove_if_same(const std::string& path, const struct stat& read_st) {
  struct stat now;
  if (::stat(path.c_str(), &now) != 0) return;
  if (now.st_dev == read_st.st_dev && now.st_ino == read_st.st_ino) ::unlink(path.c_str());
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Values of $TORCHFUSE_CACHE_DIR that mean "no disk cache".
bool means_off(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v.empty() || v == "0" || v == "off";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public hashing helpers.
// ---------------------------------------------------------------------------------------------

std::string sha256_hex(const std::string& bytes) {
  auto d = sha256(bytes);
  return to_hex(d.data(), d.size());
}

std::string digest_hex(const std::string& bytes) {
  auto d = sha256(bytes);
  return to_hex(d.data(), 16);  // 128 bits
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// ---------------------------------------------------------------------------------------------
// Entry format.
// ---------------------------------------------------------------------------------------------

std::string DiskCache::encode_entry(const std::string& key, const std::string& payload) {
  std::string out;
  out.reserve(kHeaderSize + 16 + key.size() + payload.size() + kChecksumSize);
  out.append(kMagic, sizeof(kMagic));
  put_le(out, kFormatVersion, 4);
  put_le(out, key.size(), 8);
  out += key;
  put_le(out, payload.size(), 8);
  out += payload;
  put_le(out, fnv1a64(out.data(), out.size()), 8);
  return out;
}

DiskCache::DecodeStatus DiskCache::decode_entry(const std::string& bytes, std::string* key,
                                                std::string* payload) {
  // The checksum is verified first, so any damaged byte (header included) reads as Corrupt.
  if (bytes.size() < kHeaderSize + 16 + kChecksumSize) return DecodeStatus::Corrupt;
  size_t body = bytes.size() - kChecksumSize;
  if (fnv1a64(bytes.data(), body) != get_le(bytes, body, 8)) return DecodeStatus::Corrupt;
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) return DecodeStatus::Corrupt;
  if (get_le(bytes, sizeof(kMagic), 4) != kFormatVersion) return DecodeStatus::Corrupt;
  size_t pos = kHeaderSize;
  if (!read_chunk(bytes, &pos, body, key)) return DecodeStatus::Corrupt;
  if (!read_chunk(bytes, &pos, body, payload)) return DecodeStatus::Corrupt;
  return pos == body ? DecodeStatus::Ok : DecodeStatus::Corrupt;  // no trailing garbage
}

// ---------------------------------------------------------------------------------------------
// DiskCache.
// ---------------------------------------------------------------------------------------------

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)), write_(&::write) {
  // Drop trailing slashes (but keep "/") so joined paths are tidy.
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

std::string DiskCache::default_dir() {
  if (const char* v = std::getenv("TORCHFUSE_CACHE_DIR")) {
    return means_off(v) ? std::string() : std::string(v);
  }
  std::string xdg = env_or_empty("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/torchfuse";  // XDG: relative paths are invalid
  std::string home = env_or_empty("HOME");
  if (!home.empty()) return home + "/.cache/torchfuse";
  return std::string();
}

bool DiskCache::enabled() const { return !dir_.empty(); }

const std::string& DiskCache::dir() const { return dir_; }

std::string DiskCache::path_for(const std::string& key) const {
  if (!enabled()) return std::string();
  // The format version is hashed in, so a future layout never reads this one's files.
  std::string salted = "torchfuse-cache-v" + std::to_string(kFormatVersion);
  salted.push_back('\0');
  salted += key;
  return dir_ + "/" + digest_hex(salted) + ".tfc";
}

std::optional<std::string> DiskCache::load(const std::string& key) {
  if (!enabled()) return std::nullopt;
  Outcome outcome = Outcome::Miss;
  std::optional<std::string> result;
  try {
    result = load_impl(key, &outcome);
  } catch (...) {  // e.g. bad_alloc on a huge file: treat as a miss, never propagate
    result.reset();
    outcome = Outcome::Miss;
  }
  count(outcome);
  return result;
}

std::optional<std::string> DiskCache::load_impl(const std::string& key, Outcome* outcome) {
  *outcome = Outcome::Miss;
  std::string path = path_for(key);
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) return std::nullopt;  // absent (or unreadable): a plain miss
  struct stat st;
  std::string bytes;
  if (::fstat(fd.fd, &st) != 0 || !read_all(fd.fd, &bytes)) return std::nullopt;
  std::string stored_key, payload;
  if (decode_entry(bytes, &stored_key, &payload) != DecodeStatus::Ok) {
    *outcome = Outcome::Corrupt;
    remove_if_same(path, st);
    return std::nullopt;
  }
  if (stored_key != key) return std::nullopt;  // digest collision: a valid entry of another key
  *outcome = Outcome::Hit;
  return payload;
}

bool DiskCache::store(const std::string& key, const std::string& payload) {
  if (!enabled()) return false;
  if (!storing_) {  // a store failed before: memory only from then on
    count_store(false);
    return false;
  }
  bool ok = false;
  std::string why;
  try {
    ok = store_impl(key, payload, &why);
  } catch (...) {  // allocation failure while encoding: report, never propagate
    ok = false;
    why = "encoding the entry: out of memory";
  }
  count_store(ok);
  if (!ok) stop_storing(why);
  return ok;
}

bool DiskCache::store_impl(const std::string& key, const std::string& payload, std::string* why) {
  if (!make_dirs(dir_)) {
    *why = describe_failure("mkdir", dir_);
    return false;
  }
  std::string final_path = path_for(key);
  std::string tmp = temp_path(dir_, final_path.substr(dir_.size() + 1));
  std::string bytes = encode_entry(key, payload);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = describe_failure("open", tmp);
    return false;
  }
  bool ok = write_all(write_, fd, bytes);
  if (!ok) *why = describe_failure("write", tmp);
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    *why = describe_failure("fsync", tmp);
  }
  if (::close(fd) != 0 && ok) {  // close can report delayed write errors
    ok = false;
    *why = describe_failure("close", tmp);
  }
  // rename() is atomic: readers see the old complete file or the new one, never a partial one.
  if (ok && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    ok = false;
    *why = describe_failure("rename", final_path);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return false;
  }
  fsync_dir(dir_);
  return true;
}

void DiskCache::stop_storing(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (store_error_.empty()) store_error_ = why;
  }
  if (!storing_.exchange(false)) return;  // another thread's failure was first, and warned
  log_warn("torchfuse: cannot write the kernel cache in " + dir_ + " (" + why +
           "); kernels compiled from now on stay in this process's memory only (entries already there are still "
           "read). Set TORCHFUSE_CACHE_DIR to a writable directory, or to off.");
}

std::string DiskCache::store_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_error_;
}

void DiskCache::set_write_for_testing(WriteFn write) { write_ = write ? write : &::write; }

void DiskCache::count(Outcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  if (outcome == Outcome::Hit) {
    ++counters_.hits;
    return;
  }
  ++counters_.misses;
  if (outcome == Outcome::Corrupt) ++counters_.corrupt;
}

void DiskCache::count_store(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ok) {
    ++counters_.stores;
  } else {
    ++counters_.store_failures;
  }
}

DiskCache::Counters DiskCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace torchfuse::runtime
