// Files as the recorder writes them, with errors that name the file and the
// reason (errno's text), never a bare "writing failed".
//
// - Sink: where a stream of bytes goes (a trace file; a string in tests).
// - FileSink: a Sink on a file written with write(2), no buffering of its
//   own (the trace writer hands it whole chunks).
// - OpenRegularFile: a file to read, refused unless it is a regular one.
// - ReplaceFile: writes a whole file atomically (a temporary file beside it,
//   then rename), so that a process killed at any moment leaves the file
//   either as it was or as it is now: never empty, never half-written. A
//   process killed while writing one leaves the temporary file behind, which
//   the next ReplaceFile of the same file replaces, and RemoveStaleTemporary
//   removes.
//
// Thread-safety: a Sink is used by one thread at a time (the trace writer
// holds its lock around it); ReplaceFile may be called from any thread.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace api_tracer {

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes all of `data`, or fails saying which file and why.
  virtual Status Write(std::string_view data) = 0;
};

class FileSink : public Sink {
 public:
  // Creates (or truncates) `path` for writing.
  static Status Create(const std::string& path, std::unique_ptr<FileSink>* out);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  Status Write(std::string_view data) override;
  // Closes the file (the destructor does too, ignoring errors); idempotent.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  FileSink(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// Replaces `path` with `content` atomically (see above). The temporary file
// is ".NAME.tmp" in the same directory, removed again when writing fails.
Status ReplaceFile(const std::string& path, std::string_view content);

// The temporary file ReplaceFile writes `path` through: DIR/.NAME.tmp.
std::string TemporaryOf(const std::string& path);

// Removes the temporary file of `path` a killed process may have left
// (none there is no error).
void RemoveStaleTemporary(const std::string& path);

// `path` opened for reading, if it is a regular file: opened without
// blocking and checked once open, so that a FIFO (or /dev/zero, a
// directory) in its place is refused rather than waited on or read without
// end. An error names the file (Status::At).
Status OpenRegularFile(const std::string& path, std::FILE** out);

}  // namespace api_tracer
