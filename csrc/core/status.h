// Status: the result of an operation that can fail, as a value.
//
// The core never throws and never prints: a function that can fail returns a
// Status, and the caller decides what to do with it (the Python binding turns
// it into an exception in one place, python/bindings.h's RaiseIfError). A
// default Status is OK. An error in a file's content says where: the file,
// its line and column (At).
// Thread-safety: a Status is a plain value; distinct objects may be used from
// different threads freely.
#pragma once

#include <string>
#include <utility>

namespace api_tracer {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kFailedPrecondition, kIOError, kParseError, kCorruption };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  // The operation conflicts with what is running now (a second tracer).
  static Status FailedPrecondition(std::string msg) { return Status(Code::kFailedPrecondition, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  // A config line that does not follow the grammar; `column` is 1-based.
  static Status ParseError(std::string msg, size_t column) {
    Status s(Code::kParseError, std::move(msg));
    s.column_ = column;
    return s;
  }
  // Data that is not as it should be: a call key that does not decode, a
  // file not as the tracer writes it (then At says where).
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }

  // This error, located in the file `path`, at its 1-based `line` and
  // `column` (0: not known; a column already set is kept then).
  Status At(std::string path, size_t line = 0, size_t column = 0) && {
    path_ = std::move(path);
    line_ = line;
    if (column) column_ = column;
    return std::move(*this);
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // For parse errors and located ones: the 1-based column the error was
  // found at, else 0.
  size_t column() const { return column_; }
  // For located errors (At): the file, and its 1-based line (0: not known).
  const std::string& path() const { return path_; }
  size_t line() const { return line_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
  std::string path_;
  size_t line_ = 0;
  size_t column_ = 0;
};

}  // namespace api_tracer
