#include "core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace api_tracer {
namespace {

Status Failed(const char* what, const std::string& path, int err) {
  return Status::IOError(std::string(what) + " " + path + " failed: " + std::strerror(err));
}

int OpenForWriting(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// 0, or the errno of the write that failed.
int WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

// 0, or the errno of close (a delayed write error shows here on some file systems).
int CloseFd(int fd) { return ::close(fd) == 0 || errno == EINTR ? 0 : errno; }

}  // namespace

Status FileSink::Create(const std::string& path, std::unique_ptr<FileSink>* out) {
  int fd = OpenForWriting(path);
  if (fd < 0) return Failed("opening", path, errno);
  out->reset(new FileSink(path, fd));
  return Status::OK();
}

FileSink::~FileSink() { Close(); }

Status FileSink::Write(std::string_view data) {
  if (fd_ < 0) return Status::IOError("writing " + path_ + " failed: the file is closed");
  int err = WriteAll(fd_, data);
  return err ? Failed("writing", path_, err) : Status::OK();
}

Status FileSink::Close() {
  if (fd_ < 0) return Status::OK();
  int err = CloseFd(fd_);
  fd_ = -1;
  return err ? Failed("writing", path_, err) : Status::OK();
}

std::string TemporaryOf(const std::string& path) {
  std::filesystem::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".tmp")).string();
}

void RemoveStaleTemporary(const std::string& path) { ::unlink(TemporaryOf(path).c_str()); }

Status ReplaceFile(const std::string& path, std::string_view content) {
  std::string temp = TemporaryOf(path);
  int fd = OpenForWriting(temp);
  if (fd < 0) return Failed("writing", path, errno);
  int err = WriteAll(fd, content);
  int close_err = CloseFd(fd);
  if (!err) err = close_err;
  if (!err && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(temp.c_str());
    return Failed("writing", path, err);
  }
  return Status::OK();
}

Status OpenRegularFile(const std::string& path, std::FILE** out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::IOError(errno == ENOENT ? "no such file" : std::strerror(errno)).At(path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    return Status::IOError(dir ? "a directory, not a regular file: only regular files are read"
                               : "not a regular file: only regular files are read")
        .At(path);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *out = ::fdopen(fd, "rb");
  if (!*out) {
    int error = errno;
    ::close(fd);
    return Status::IOError(std::strerror(error)).At(path);
  }
  return Status::OK();
}

}  // namespace api_tracer
