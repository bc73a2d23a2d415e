// ConstantSpill: a model's large constants kept in a file instead of in
// anonymous memory, paged in when read and given back once packed.
//
// Why: a compiled Program reads most weight matrices only through its own
// packed copy (codegen/cpu/skinny_matmul.h, panel_rows_matmul.h), but the
// model graph must keep the plain bytes: a later tier's compile packs them
// again, the interpreter and bundles read them. Held in heap memory, that is
// a second resident copy of every weight. Here the plain bytes live in an
// unlinked file of our own (nobody else can change or truncate it), mapped
// read-only: a page is resident only while something reads it, and
// ReleaseResidentPages() drops the pages of a constant once its packed copy
// exists. A later reader faults them back in from the file: releasing is a
// hint about memory, never a change of a value. An embedding table read
// through a Gather is read with pread (SpilledRangeOf, ReadSpilled), so none
// of it becomes resident: a fault on the mapping would map the whole
// page-cache folio holding a row (2 MiB on ext4, which writes large folios,
// read-ahead and MADV_RANDOM notwithstanding), and a 250 MiB table was 60 MiB
// resident after 80 tokens.
//
// A ConstantSpill is written by one thread at a time (an import, a session's
// setup); ReleaseResidentPages and IsSpilled are thread-safe.
//
// The directory must be on a disk: on tmpfs or ramfs the file's pages are
// memory themselves, so Open() refuses such a directory (FAILED_PRECONDITION)
// and callers keep the constants in memory.
#ifndef SHAPESHIFT_GRAPH_CONSTANT_SPILL_H_
#define SHAPESHIFT_GRAPH_CONSTANT_SPILL_H_

#include <cstddef>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace shapeshift {

// Constants smaller than this stay in memory: a page of padding each and
// a mapping per tensor are not worth it for biases and norms.
inline constexpr size_t kSpillMinBytes = size_t{1} << 20;

class ConstantSpill {
 public:
  // An unlinked file in `dir` (created if missing) that takes at most
  // `capacity` bytes: a write past it fails like a full disk would.
  static absl::StatusOr<std::unique_ptr<ConstantSpill>> Open(const std::string& dir,
                                                             int64_t capacity = INT64_MAX);
  ~ConstantSpill();
  ConstantSpill(const ConstantSpill&) = delete;
  ConstantSpill& operator=(const ConstantSpill&) = delete;

  // The same tensor with its bytes in the file, mapped read-only; the
  // mapping lives as long as the returned tensor's storage (not this object).
  // An error (a full disk, say) leaves `tensor` as it was.
  absl::StatusOr<Tensor> Spill(const Tensor& tensor);
  // A tensor of `dtype` and `shape` whose bytes are `bytes` (as many as
  // they need), written straight to the file: the importer's path, so a
  // weight read from a model is never also copied into the heap.
  absl::StatusOr<Tensor> SpillBytes(DType dtype, const std::vector<int64_t>& shape, const void* bytes, size_t size);

  // The same for `bytes` bytes at `src_offset` of the open file `src_fd`
  // (a model's external data), copied file to file by the kernel where it
  // can (copy_file_range): they never pass through this process's memory.
  absl::StatusOr<Tensor> SpillFromFile(DType dtype, const std::vector<int64_t>& shape, int src_fd,
                                       int64_t src_offset, size_t bytes);

  int64_t bytes_written() const { return bytes_written_; }

 private:
  // Checks the size and the capacity, reserves the blocks, calls
  // write(offset in this file), then maps what it wrote.
  absl::StatusOr<Tensor> Place(DType dtype, const std::vector<int64_t>& shape, size_t bytes,
                               absl::FunctionRef<absl::Status(int64_t offset)> write);
  // pwrite of all `bytes` at `offset` of this file.
  absl::Status WriteAll(const char* data, size_t bytes, int64_t offset);
  ConstantSpill(std::string dir, std::shared_ptr<const int> fd, int64_t capacity)
      : dir_(std::move(dir)), fd_(std::move(fd)), capacity_(capacity) {}
  std::string dir_;
  std::shared_ptr<const int> fd_;  // closed when this and every mapping are gone
  int64_t capacity_ = INT64_MAX;
  int64_t offset_ = 0;  // next page-aligned write position
  int64_t bytes_written_ = 0;
};

// Open(dir) for a caller that only wants the spill where it can be had: null
// for an empty `dir` or one Open refuses (whoever reports where the weights
// are opens it again for the reason: SessionOptions::weights_dir).
std::unique_ptr<ConstantSpill> OpenSpillIfAny(const std::string& dir);

struct SpillStats {
  int64_t constants = 0;  // in a spill file now
  int64_t bytes = 0;
  int64_t moved = 0;      // of `constants`, moved there by this call
};

// Moves every constant of `graph` of at least `min_bytes` into `spill`.
// Constants already in a spill file stay where they are and are counted.
absl::StatusOr<SpillStats> SpillLargeConstants(Graph& graph, ConstantSpill& spill, size_t min_bytes = kSpillMinBytes);

// Drops from this process's resident memory the whole pages of
// [data, data + bytes) that lie in a ConstantSpill mapping, returning how many
// bytes that was; memory anywhere else is left alone (0). The bytes stay
// readable: the next read faults them back in from the file.
int64_t ReleaseResidentPages(const void* data, size_t bytes);

// Where a ConstantSpill mapping's bytes lie in its file: the file stays
// open while a SpilledRange refers to it, whatever happens to the spill.
struct SpilledRange {
  std::shared_ptr<const int> fd;  // null: not spilled
  int64_t offset = 0;             // the file offset of the range's first byte
  explicit operator bool() const { return fd != nullptr; }
};
// The file range of [data, data + bytes) if it lies wholly in a ConstantSpill
// mapping, else an empty SpilledRange.
SpilledRange SpilledRangeOf(const void* data, size_t bytes);
// Reads `bytes` at `offset` from the start of `range` into `dst` with pread:
// the bytes the mapping holds there, without making any page of the mapping
// resident. False on an I/O error (`dst` then undefined). Thread-safe.
bool ReadSpilled(const SpilledRange& range, int64_t offset, void* dst, size_t bytes);

// Whether [data, data + bytes) lies in a ConstantSpill mapping.
bool IsSpilled(const void* data, size_t bytes);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_CONSTANT_SPILL_H_
