// File-system helpers for the cache tests (plain POSIX): temporary directories, a directory this
// process cannot write, a write(2) that fails as a full disk does.
#pragma once

#include <cerrno>
#include <string>

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace tftest {

// A fresh directory from mkdtemp, removed recursively when the test ends (nftw: std::filesystem's
// remove_all crashed in a test binary built against pip LibTorch 2.11 on the GPU machine).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/torchfuse_test.XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    path_ = made ? made : "";
  }
  ~TempDir() {
    if (!path_.empty()) ::nftw(path_.c_str(), &TempDir::remove_one, 16, FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  static int remove_one(const char* p, const struct stat*, int, struct FTW*) {
    ::remove(p);
    return 0;
  }
  std::string path_;
};

// A directory in which this process cannot create files: `parent`/ro with mode 0500. Where the
// mode does not stop this process (tests often run as root, whom permissions do not stop), a
// probe file gets created; then /proc/self, an existing directory in which no process can create
// a file, whatever its privileges.
inline std::string unwritable_dir(const std::string& parent) {
  const std::string dir = parent + "/ro";
  ::mkdir(dir.c_str(), 0700);
  ::chmod(dir.c_str(), 0500);
  const std::string probe = dir + "/probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return dir;
  ::close(fd);
  ::unlink(probe.c_str());
  return "/proc/self";
}

// A write(2) that fails as on a full file system.
inline ssize_t full_disk_write(int, const void*, size_t) {
  errno = ENOSPC;
  return -1;
}

}  // namespace tftest
