// On-disk cache of compiled kernels (cubins), shared by threads and processes.
//
// Plain C++17 + POSIX; no LibTorch or CUDA dependency, so it can be tested without a GPU.
//
// Unwritable directory: the first store that fails (a read-only or full file system, a path that
// cannot be created) logs one warning naming the directory and the error, and from then on this
// cache stores nothing: kernels compiled later stay in the process's memory. Loads go on, so a
// read-only directory another process filled still serves its entries.
//
// Layout: one file per entry, named <digest_hex("torchfuse-cache-v<N>\0" + key)>.tfc in the cache
// directory. Entries are written to a unique temp file in the same directory, fsync'ed, and
// rename()d over the final name, so a reader (in any process) sees either the old complete file,
// the new complete file, or no file, never a half-written one.
//
// Entry format (all integers little-endian):
//   magic      8 bytes  "TFCACHE\0"
//   version    u32      kFormatVersion
//   key_len    u64      followed by key_len bytes of key
//   pay_len    u64      followed by pay_len bytes of payload
//   checksum   u64      64-bit FNV-1a of every byte before it
// The full key is stored and compared on load, so a file-name (digest) collision is a miss, never
// a wrong payload. A file that fails any check is counted as corrupt and deleted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace torchfuse::runtime {

// A stable 128-bit digest of arbitrary bytes, as 32 lowercase hex characters: the first 16 bytes
// of SHA-256 (implemented here, so the value never depends on the platform or a library).
std::string digest_hex(const std::string& bytes);

// Full SHA-256 of `bytes`, 64 lowercase hex characters (exposed for tests and other callers).
std::string sha256_hex(const std::string& bytes);

// 64-bit FNV-1a of `size` bytes at `data`, continuing from `hash` (the entry checksum).
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ULL);

class DiskCache {
 public:
  // Bumped whenever the entry layout changes; it is part of the hashed file name, so entries of
  // different format versions never share a file.
  static constexpr uint32_t kFormatVersion = 1;

  // dir empty => disabled (load returns nullopt, store does nothing and returns false).
  explicit DiskCache(std::string dir);

  // $TORCHFUSE_CACHE_DIR if set ("" or "0" or "off" => disabled => returns ""), else
  // $XDG_CACHE_HOME/torchfuse, else $HOME/.cache/torchfuse, else "" (no usable location).
  static std::string default_dir();

  bool enabled() const;
  const std::string& dir() const;

  // The file an entry for `key` lives in ("" when disabled). For tests and diagnostics.
  std::string path_for(const std::string& key) const;

  // The payload stored under `key`, or nullopt on a miss, on a corrupted/truncated entry (which
  // is deleted), or when the entry's stored key differs from `key`. Never throws.
  std::optional<std::string> load(const std::string& key);

  // Atomically (temp file + fsync + rename) stores `payload` under `key`, creating the directory
  // (recursively, mode 0700) if needed. False on any I/O error, when disabled, and after a
  // failed store (see "Unwritable directory" above). Never throws.
  bool store(const std::string& key, const std::string& payload);

  // False once a store has failed: this cache stores nothing more.
  bool storing() const { return storing_; }
  // What made the first store fail ("" while storing): the call, the path and the system's error.
  std::string store_error() const;

  // The write(2) behind entry files. Tests replace it to fail as a full disk does (ENOSPC).
  using WriteFn = ssize_t (*)(int fd, const void* data, size_t size);
  void set_write_for_testing(WriteFn write);

  // Every load that returns nullopt on an enabled cache is a miss; corrupt entries are also
  // counted in `corrupt`. Every store that returns false on an enabled cache is a
  // `store_failures` (those skipped after a failure too). A disabled cache counts nothing.
  struct Counters {
    int64_t hits = 0, misses = 0, corrupt = 0, stores = 0, store_failures = 0;
  };
  Counters counters() const;  // thread-safe

  // Serialises an entry in the format above (exposed so tests can forge and damage entries).
  static std::string encode_entry(const std::string& key, const std::string& payload);

  // Result of parsing an entry file's bytes.
  enum class DecodeStatus { Ok, Corrupt };
  // Checks `bytes` and on success fills `key` and `payload`.
  static DecodeStatus decode_entry(const std::string& bytes, std::string* key, std::string* payload);

 private:
  enum class Outcome { Hit, Miss, Corrupt };
  std::optional<std::string> load_impl(const std::string& key, Outcome* outcome);
  // On failure fills `why` with the call, the path and strerror(errno).
  bool store_impl(const std::string& key, const std::string& payload, std::string* why);
  void count(Outcome outcome);
  void count_store(bool ok);
  // The first failure stops storing, with one warning.
  void stop_storing(const std::string& why);

  std::string dir_;
  WriteFn write_;
  std::atomic<bool> storing_{true};
  mutable std::mutex mu_;  // guards counters_ and store_error_
  Counters counters_;
  std::string store_error_;
};

}  // namespace torchfuse::runtime
