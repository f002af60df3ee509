#include "aten/nested_ops.h"

#include <memory>

namespace api_tracer::aten {
namespace {

thread_local NestedOps* tl_on = nullptr;

}  // namespace

std::unique_ptr<at::ObserverContext> NestedOpsSeen(const at::RecordFunction& fn) {
  NestedOps* on = tl_on;
  if (on == nullptr) return nullptr;
  std::string name = fn.name();
  const char* overload = fn.overload_name();
  if (overload != nullptr && *overload != '\0') name.append(".").append(overload);
  if (on->seen_.insert(name).second) on->names_.push_back(std::move(name));
  return nullptr;
}

bool NestedOps::Start() {
  if (tl_on != nullptr && tl_on != this) return false;
  Stop();
  names_.clear();
  seen_.clear();
  tl_on = this;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&NestedOpsSeen).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  return true;
}

void NestedOps::Stop() {
  if (handle_ == 0) return;
  at::removeCallback(handle_);
  handle_ = 0;
  tl_on = nullptr;
}

}  // namespace api_tracer::aten
