// FileDescriptor: an open file descriptor closed on every path out of a
// scope — the one owner type for the descriptors the importer (external
// data) and the persistent cache open — and the one loop that reads or
// writes a whole range at an offset (pread/pwrite move fewer bytes than
// asked for, or are interrupted, and must be called again).
#ifndef SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_
#define SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace shapeshift {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, returning close()'s result: the error a deferred write may
  // surface only here.
  int Close() {
    const int result = fd_ >= 0 ? close(fd_) : 0;
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

// All `n` bytes at `offset` of `fd`, however many calls that takes. False on
// an error (errno says which) or when the file ends first (errno is 0 then);
// the caller's message names the file.
inline bool PreadFully(int fd, void* dst, size_t n, int64_t offset) {
  char* out = static_cast<char*>(dst);
  for (size_t done = 0; done < n;) {
    const ssize_t got = pread(fd, out + done, n - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) errno = 0;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

inline bool PwriteFully(int fd, const void* src, size_t n, int64_t offset) {
  const char* in = static_cast<const char*>(src);
  for (size_t done = 0; done < n;) {
    const ssize_t put = pwrite(fd, in + done, n - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (put < 0 && errno == EINTR) continue;
    if (put == 0) errno = 0;
    if (put <= 0) return false;
    done += static_cast<size_t>(put);
  }
  return true;
}

}  // namespace shapeshift

#endif  // SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_
