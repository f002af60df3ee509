// NestedOps: the aten operators that run on the calling thread while one is
// on (at::RecordFunction, FUNCTION scope, a thread-local callback that boxes
// no inputs), each written "name" or "name.overload", once, in the order of
// its first call. What an operator call did inside, on a stock build of
// torch: fuzz's feedback mode keeps a case whose operators are new for its
// API (replay's behaviour signature, replay/behaviour.py). One at a time on
// a thread; start and stop on the same thread.
#pragma once

#include <ATen/record_function.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace api_tracer::aten {

class NestedOps {
 public:
  NestedOps() = default;
  ~NestedOps() { Stop(); }
  NestedOps(const NestedOps&) = delete;
  NestedOps& operator=(const NestedOps&) = delete;

  // Forgets what was seen and starts seeing; false if another NestedOps is
  // on on this thread.
  bool Start();
  void Stop();
  bool on() const { return handle_ != 0; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  friend std::unique_ptr<at::ObserverContext> NestedOpsSeen(const at::RecordFunction& fn);
  at::CallbackHandle handle_ = 0;
  std::vector<std::string> names_;
  std::unordered_set<std::string> seen_;
};

}  // namespace api_tracer::aten
