#include "graph/constant_spill.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_descriptor.h"

namespace shapeshift {
namespace {

// The live mappings, by start address: ReleaseResidentPages must never
// madvise memory that is not a file mapping of ours (MADV_DONTNEED on heap
// memory would zero it).
struct Mapping {
  size_t length = 0;
  std::shared_ptr<const int> fd;  // the file, for SpilledRangeOf
  int64_t offset = 0;             // where the mapping starts in it
};
struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Mapping> mappings;  // by start
};
Registry& Mappings() {
  static Registry* registry = new Registry();
  return *registry;
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// The mapping holding [p, p + n) wholly, with its start; null if none.
// Caller holds the registry's lock.
const Mapping* MappingOf(Registry& r, uintptr_t p, size_t n, uintptr_t* start = nullptr) {
  auto it = r.mappings.upper_bound(p);
  if (it == r.mappings.begin()) return nullptr;
  --it;
  if (p + n > it->first + it->second.length) return nullptr;
  if (start != nullptr) *start = it->first;
  return &it->second;
}

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ConstantSpill>> ConstantSpill::Open(const std::string& dir, int64_t capacity) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("weights directory '", dir, "': ", ec.message()));
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0) return Errno(absl::StrCat("weights directory '", dir, "'"));
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
    return absl::FailedPreconditionError(absl::StrCat("weights directory '", dir,
                                                      "' is on tmpfs/ramfs: its file would be memory too"));
  }
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {  // a filesystem without O_TMPFILE: a named file, unlinked at once
    std::string path = (std::filesystem::path(dir) / "weights-XXXXXX").string();
    fd = mkstemp(path.data());
    if (fd < 0) return Errno(absl::StrCat("creating a file in weights directory '", dir, "'"));
    unlink(path.c_str());
  }
  std::shared_ptr<const int> shared(new int(fd), [](const int* f) {
    close(*f);
    delete f;
  });
  return std::unique_ptr<ConstantSpill>(new ConstantSpill(dir, std::move(shared), capacity));
}

ConstantSpill::~ConstantSpill() = default;  // the mappings stay valid without the descriptor

absl::StatusOr<Tensor> ConstantSpill::Spill(const Tensor& tensor) {
  return SpillBytes(tensor.dtype(), tensor.shape(), tensor.raw(), tensor.byte_size());
}

absl::StatusOr<Tensor> ConstantSpill::SpillBytes(DType dtype, const std::vector<int64_t>& shape, const void* data,
                                                 size_t bytes) {
  return Place(dtype, shape, bytes,
               [&](int64_t offset) { return WriteAll(static_cast<const char*>(data), bytes, offset); });
}

absl::Status ConstantSpill::WriteAll(const char* data, size_t bytes, int64_t offset) {
  if (!PwriteFully(*fd_, data, bytes, offset)) {
    return Errno(absl::StrCat("writing ", bytes, " bytes to weights directory '", dir_, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ConstantSpill::SpillFromFile(DType dtype, const std::vector<int64_t>& shape, int src_fd,
                                                    int64_t src_offset, size_t bytes) {
  return Place(dtype, shape, bytes, [&](int64_t offset) -> absl::Status {
    size_t done = 0;
    // The kernel copies between the two files: no byte passes through this
    // process's memory. Across filesystems (or where the kernel cannot),
    // through a buffer of 8 MiB.
    while (done < bytes) {
      loff_t in = src_offset + static_cast<loff_t>(done);
      loff_t out = offset + static_cast<loff_t>(done);
      const ssize_t n = copy_file_range(src_fd, &in, *fd_, &out, bytes - done, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) break;
      if (n < 0) return Errno(absl::StrCat("copying ", bytes, " bytes to weights directory '", dir_, "'"));
      if (n == 0) return absl::DataLossError("the source file ended before the tensor's bytes");
      done += static_cast<size_t>(n);
    }
    if (done == bytes) return absl::OkStatus();
    std::vector<char> buffer(std::min<size_t>(bytes - done, size_t{8} << 20));
    while (done < bytes) {
      const size_t want = std::min(buffer.size(), bytes - done);
      const ssize_t got = pread(src_fd, buffer.data(), want, src_offset + static_cast<int64_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Errno("reading the source file");
      if (got == 0) return absl::DataLossError("the source file ended before the tensor's bytes");
      if (absl::Status s = WriteAll(buffer.data(), static_cast<size_t>(got), offset + static_cast<int64_t>(done));
          !s.ok()) {
        return s;
      }
      done += static_cast<size_t>(got);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<Tensor> ConstantSpill::Place(DType dtype, const std::vector<int64_t>& shape, size_t bytes,
                                            absl::FunctionRef<absl::Status(int64_t offset)> write) {
  // The bytes must be exactly the shape's before anything is written.
  absl::StatusOr<size_t> expected = Tensor::ByteSizeOf(dtype, shape);
  if (!expected.ok()) return expected.status();
  if (*expected != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(bytes, " bytes where the shape needs ", *expected));
  }
  if (bytes == 0) return Tensor::Zeros(dtype, shape);
  if (static_cast<int64_t>(bytes) > capacity_ - bytes_written_) {
    return absl::ResourceExhaustedError(absl::StrCat("weights directory '", dir_, "': ", bytes,
                                                     " more bytes would pass the spill's capacity of ", capacity_));
  }
  const int64_t offset = offset_;
  // The blocks reserved before the write (ext4 then skips delayed
  // allocation page by page; measured, GPT-2's 652 MB loaded in 1.0-1.9 s
  // more than in memory without this, 0.5-0.9 s with it, on a noisy VM).
  // Where the filesystem cannot, the write allocates.
  (void)fallocate(*fd_, 0, offset, static_cast<off_t>(bytes));
  if (absl::Status s = write(offset); !s.ok()) return s;
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, *fd_, offset);
  if (map == MAP_FAILED) return Errno(absl::StrCat("mapping ", bytes, " bytes of weights directory '", dir_, "'"));
  {
    Registry& r = Mappings();
    std::lock_guard<std::mutex> lock(r.mu);
    r.mappings[reinterpret_cast<uintptr_t>(map)] = Mapping{bytes, fd_, offset};
  }
  const size_t page = PageSize();
  offset_ += static_cast<int64_t>((bytes + page - 1) / page * page);
  bytes_written_ += static_cast<int64_t>(bytes);
  // The written pages are in the page cache, not in this process: the
  // mapping is resident only where it is read.
  std::shared_ptr<std::byte[]> storage(static_cast<std::byte*>(map), [bytes](std::byte* p) {
    Registry& r = Mappings();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      r.mappings.erase(reinterpret_cast<uintptr_t>(p));
    }
    munmap(p, bytes);
  });
  return Tensor::Uninitialized(dtype, shape, [&](size_t) { return storage; });
}

absl::StatusOr<SpillStats> SpillLargeConstants(Graph& graph, ConstantSpill& spill, size_t min_bytes) {
  SpillStats stats;
  for (Value* v : graph.constants()) {
    const Tensor& t = *v->constant();
    const bool there = IsSpilled(t.raw(), t.byte_size());
    if (!there && t.byte_size() < min_bytes) continue;
    stats.bytes += static_cast<int64_t>(t.byte_size());
    ++stats.constants;
    if (there) continue;
    absl::StatusOr<Tensor> moved = spill.Spill(t);
    if (!moved.ok()) return moved.status();
    ++stats.moved;
    if (absl::Status s = graph.ReplaceConstant(v, *std::move(moved)); !s.ok()) return s;
  }
  return stats;
}

int64_t ReleaseResidentPages(const void* data, size_t bytes) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  Registry& r = Mappings();
  std::lock_guard<std::mutex> lock(r.mu);  // held: the mapping cannot go away meanwhile
  if (bytes == 0 || MappingOf(r, p, bytes) == nullptr) return 0;
  const uintptr_t page = PageSize();
  const uintptr_t begin = (p + page - 1) / page * page;
  const uintptr_t end = (p + bytes) / page * page;
  if (end <= begin) return 0;
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) != 0) return 0;
  return static_cast<int64_t>(end - begin);
}

SpilledRange SpilledRangeOf(const void* data, size_t bytes) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  Registry& r = Mappings();
  std::lock_guard<std::mutex> lock(r.mu);
  uintptr_t start = 0;
  const Mapping* m = bytes > 0 ? MappingOf(r, p, bytes, &start) : nullptr;
  if (m == nullptr) return {};
  return SpilledRange{m->fd, m->offset + static_cast<int64_t>(p - start)};
}

bool ReadSpilled(const SpilledRange& range, int64_t offset, void* dst, size_t bytes) {
  if (!range) return false;
  char* out = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pread(*range.fd, out + done, bytes - done, range.offset + offset + static_cast<int64_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool IsSpilled(const void* data, size_t bytes) {
  Registry& r = Mappings();
  std::lock_guard<std::mutex> lock(r.mu);
  return bytes > 0 && MappingOf(r, reinterpret_cast<uintptr_t>(data), bytes) != nullptr;
}

std::unique_ptr<ConstantSpill> OpenSpillIfAny(const std::string& dir) {
  if (dir.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  return spill.ok() ? *std::move(spill) : nullptr;
}

}  // namespace shapeshift
