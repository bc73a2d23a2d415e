#include "runtime/persist/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "base/file_descriptor.h"
#include "runtime/persist/artifact_file.h"

namespace shapeshift::runtime::persist {
namespace {

absl::Status ValidateName(absl::string_view what, absl::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxArtifactKeyLength && name[0] != '.';
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '-' || c == '.');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("cache ", what, " '", name,
                                                 "': must be 1 to 128 of [A-Za-z0-9_.-], not starting with '.'"));
}

std::string ErrnoText(int error) { return std::strerror(error); }

// Reads until `size` bytes or end of file; the count read, or -1 (errno set).
int64_t ReadUpTo(int fd, char* data, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// What a non-regular file is, for messages.
const char* FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

}  // namespace

absl::StatusOr<std::string> DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return absl::StrCat(xdg, "/shapeshift");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return absl::StrCat(home, "/.cache/shapeshift");
  return absl::FailedPreconditionError(
      "no default cache directory: XDG_CACHE_HOME is not an absolute path and HOME is not set (pass --cache-dir)");
}

std::string DefaultWeightsDir(const std::string& cache_dir) {
  if (!cache_dir.empty()) return absl::StrCat(cache_dir, "/weights");
  absl::StatusOr<std::string> dir = DefaultCacheDir();
  return dir.ok() ? absl::StrCat(*dir, "/weights") : std::string();
}

absl::StatusOr<std::unique_ptr<ArtifactCache>> ArtifactCache::Open(const std::string& dir,
                                                                   const ArtifactCacheOptions& options) {
  if (dir.empty()) return absl::InvalidArgumentError("cache directory: empty path");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::FailedPreconditionError(absl::StrCat("cache directory '", dir, "': ", error.message()));
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::FailedPreconditionError(absl::StrCat("cache directory '", dir, "': not a directory"));
  }
  if (access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cache directory '", dir, "': ", ErrnoText(errno)));
  }
  return std::unique_ptr<ArtifactCache>(new ArtifactCache(dir, options));
}

std::string ArtifactCache::PathOf(absl::string_view ns, absl::string_view key) const {
  return absl::StrCat(dir_, "/", ns, "/", key);
}

ArtifactCacheStats ArtifactCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status ArtifactCache::Error(absl::Status status) {
  absl::MutexLock lock(&mu_);
  ++stats_.errors;
  stats_.last_problem = std::string(status.message());
  if (options_.warnings != nullptr) *options_.warnings << "shapeshift: cache: " << status.message() << "\n";
  return status;
}

void ArtifactCache::Reject(const std::string& path, absl::string_view reason) {
  std::string problem = absl::StrCat(path, ": ", reason, "; not loaded, deleted, will be rebuilt");
  absl::MutexLock lock(&mu_);
  ++stats_.rejected;
  ++stats_.misses;
  stats_.last_problem = problem;
  if (options_.warnings != nullptr) *options_.warnings << "shapeshift: cache: " << problem << "\n";
}

absl::StatusOr<std::optional<std::string>> ArtifactCache::Read(const std::string& path, absl::string_view key) {
  auto miss = [&]() -> std::optional<std::string> {
    absl::MutexLock lock(&mu_);
    ++stats_.misses;
    return std::nullopt;
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it would block
  // forever); O_NOFOLLOW: an entry is a file, never a link to elsewhere.
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT) return miss();
    // A symbolic link (ELOOP), a socket (ENXIO), or a non-directory where
    // the namespace directory belongs (ENOTDIR).
    if (error == ELOOP || error == ENXIO || error == ENOTDIR) {
      if (absl::Status s = MoveAsideIfNotRegular(path); !s.ok()) return Error(s);
      return miss();
    }
    return Error(absl::UnavailableError(absl::StrCat(path, ": cannot open: ", ErrnoText(error))));
  }
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) {
    return Error(absl::UnavailableError(absl::StrCat(path, ": cannot stat: ", ErrnoText(errno))));
  }
  if (!S_ISREG(info.st_mode)) {
    fd.Close();
    if (absl::Status s = MoveAsideIfNotRegular(path); !s.ok()) return Error(s);
    return miss();
  }
  // Deletes the damaged file unless a writer has already renamed a new one
  // over it (then the name no longer refers to what was read).
  auto reject = [&](absl::string_view reason) -> std::optional<std::string> {
    struct stat now {};
    if (stat(path.c_str(), &now) == 0 && now.st_ino == info.st_ino && now.st_dev == info.st_dev) {
      unlink(path.c_str());
    }
    Reject(path, reason);
    return std::nullopt;
  };
  const uint64_t file_size = static_cast<uint64_t>(info.st_size);
  char header_bytes[kArtifactHeaderSize];
  int64_t got = ReadUpTo(fd.get(), header_bytes, kArtifactHeaderSize);
  if (got < 0) return Error(absl::UnavailableError(absl::StrCat(path, ": read failed: ", ErrnoText(errno))));
  absl::StatusOr<ArtifactHeader> header =
      ParseArtifactHeader(absl::string_view(header_bytes, static_cast<size_t>(got)), file_size,
                          options_.max_payload_bytes);
  if (!header.ok()) return reject(header.status().message());
  // The header's lengths now account for exactly the file's size, which
  // bounds this allocation.
  std::string body(file_size - kArtifactHeaderSize, '\0');
  got = ReadUpTo(fd.get(), body.data(), body.size());
  if (got < 0) return Error(absl::UnavailableError(absl::StrCat(path, ": read failed: ", ErrnoText(errno))));
  if (static_cast<uint64_t>(got) != body.size()) return reject("file shrank while being read (truncated)");
  absl::string_view stored_key = absl::string_view(body).substr(0, header->key_length);
  absl::string_view payload = absl::string_view(body).substr(header->key_length);
  if (ArtifactChecksum(stored_key, payload) != header->checksum) return reject("checksum mismatch (corrupted)");
  if (stored_key != key) return reject(absl::StrCat("holds the entry for key '", stored_key, "'"));
  body.erase(0, header->key_length);
  absl::MutexLock lock(&mu_);
  ++stats_.hits;
  return std::optional<std::string>(std::move(body));
}

absl::Status ArtifactCache::MoveAsideIfNotRegular(const std::string& path) {
  // The squatter may be the entry itself or, when the namespace directory
  // is not a directory, the namespace.
  std::string squatter = path;
  struct stat info {};
  if (lstat(squatter.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) return absl::OkStatus();  // gone meanwhile: nothing to move
    squatter = std::filesystem::path(path).parent_path().string();
    if (error != ENOTDIR || lstat(squatter.c_str(), &info) != 0 || S_ISDIR(info.st_mode)) {
      return absl::UnavailableError(absl::StrCat(path, ": cannot stat: ", ErrnoText(error)));
    }
  } else if (S_ISREG(info.st_mode)) {
    return absl::OkStatus();  // replaced by a real entry meanwhile
  }
  static std::atomic<uint64_t> next_quarantine{0};
  const std::filesystem::path where(squatter);
  const std::string aside = (where.parent_path() / absl::StrCat(".", where.filename().string(), ".quarantined.",
                                                                getpid(), ".", next_quarantine++))
                                .string();
  const char* kind = FileKind(info.st_mode);
  if (rename(squatter.c_str(), aside.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(squatter, ": ", kind, " where a cache ",
                                               squatter == path ? "file" : "directory",
                                               " belongs, and it cannot be moved aside: ", ErrnoText(errno)));
  }
  std::string problem = absl::StrCat(squatter, ": ", kind, " where a cache ", squatter == path ? "file" : "directory",
                                     " belongs; moved aside to ", aside, ", the entry will be rebuilt");
  absl::MutexLock lock(&mu_);
  ++stats_.rejected;
  stats_.last_problem = problem;
  if (options_.warnings != nullptr) *options_.warnings << "shapeshift: cache: " << problem << "\n";
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ArtifactCache::Get(absl::string_view ns, absl::string_view key) {
  if (absl::Status s = ValidateName("namespace", ns); !s.ok()) return Error(s);
  if (absl::Status s = ValidateName("key", key); !s.ok()) return Error(s);
  return Read(PathOf(ns, key), key);
}

absl::Status ArtifactCache::Put(absl::string_view ns, absl::string_view key, absl::string_view payload) {
  if (absl::Status s = ValidateName("namespace", ns); !s.ok()) return Error(s);
  if (absl::Status s = ValidateName("key", key); !s.ok()) return Error(s);
  std::string path = PathOf(ns, key);
  if (payload.size() > options_.max_payload_bytes) {
    return Error(absl::InvalidArgumentError(absl::StrCat(path, ": payload of ", payload.size(),
                                                         " bytes exceeds the limit of ", options_.max_payload_bytes)));
  }
  const std::string ns_dir = absl::StrCat(dir_, "/", ns);
  std::error_code error;
  std::filesystem::create_directories(ns_dir, error);
  if (error && !std::filesystem::is_directory(std::filesystem::symlink_status(ns_dir))) {
    // Something that is not a directory holds the namespace's name.
    if (absl::Status s = MoveAsideIfNotRegular(path); !s.ok()) return Error(s);
    error.clear();
    std::filesystem::create_directories(ns_dir, error);
  }
  if (error) return Error(absl::UnavailableError(absl::StrCat(ns_dir, ": ", error.message())));
  static std::atomic<uint64_t> next_temp{0};
  std::string temp = absl::StrCat(dir_, "/", ns, "/.", key, ".tmp.", getpid(), ".", next_temp++);
  FileDescriptor fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Error(absl::UnavailableError(absl::StrCat(temp, ": cannot create: ", ErrnoText(errno))));
  bool written = WriteAll(fd.get(), EncodeArtifactFile(key, payload));
  int write_error = errno;
  if (fd.Close() != 0 && written) {
    written = false;
    write_error = errno;
  }
  bool renamed = written && rename(temp.c_str(), path.c_str()) == 0;
  if (written && !renamed && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    // A directory holds the entry's name: move it aside, then try once more.
    if (absl::Status s = MoveAsideIfNotRegular(path); !s.ok()) {
      unlink(temp.c_str());
      return Error(s);
    }
    renamed = rename(temp.c_str(), path.c_str()) == 0;
  }
  if (!renamed) {
    int rename_error = written ? errno : write_error;
    unlink(temp.c_str());
    return Error(absl::UnavailableError(absl::StrCat(path, ": cannot write: ", ErrnoText(rename_error))));
  }
  absl::MutexLock lock(&mu_);
  ++stats_.writes;
  return absl::OkStatus();
}

}  // namespace shapeshift::runtime::persist
