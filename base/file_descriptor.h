// FileDescriptor: an open file descriptor closed on every path out of a
// scope — the one owner type for the descriptors the importer (external
// data) and the persistent cache open.
#ifndef SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_
#define SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_

#include <unistd.h>

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

}  // namespace shapeshift

#endif  // SHAPESHIFT_BASE_FILE_DESCRIPTOR_H_
