// Status: the result of an operation that can fail, as a value.
//
// The core never throws and never prints: a function that can fail returns a
// Status, and the caller decides what to do with it (the Python binding turns
// it into an exception in one place). A default Status is OK.
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
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  // The operation conflicts with what is running now (a second tracer).
  static Status FailedPrecondition(std::string msg) {
    return Status(Code::kFailedPrecondition, std::move(msg));
  }
  static Status IOError(std::string msg) {
    return Status(Code::kIOError, std::move(msg));
  }
  // A config line that does not follow the grammar; `column` is 1-based.
  static Status ParseError(std::string msg, size_t column) {
    Status s(Code::kParseError, std::move(msg));
    s.column_ = column;
    return s;
  }
  static Status Corruption(std::string msg) {
    return Status(Code::kCorruption, std::move(msg));
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // For parse errors: the 1-based column the error was found at, else 0.
  size_t column() const { return column_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
  size_t column_ = 0;
};

}  // namespace api_tracer
