#include "aten/nested_ops.h"

#include <utility>

namespace api_tracer::aten {
namespace {

thread_local std::shared_ptr<NestedOps::Seen> tl_seen;

std::unique_ptr<at::ObserverContext> Saw(const at::RecordFunction& fn) {
  NestedOps::Seen* seen = tl_seen.get();
  if (seen == nullptr) return nullptr;
  std::string name = fn.name();
  const char* overload = fn.overload_name();
  if (overload != nullptr && *overload != '\0') name.append(".").append(overload);
  if (seen->known.insert(name).second) seen->names.push_back(std::move(name));
  return nullptr;
}

const std::vector<std::string> kNone;

}  // namespace

NestedOps::~NestedOps() {
  if (on() && owner_ == std::this_thread::get_id()) Stop();
}

bool NestedOps::Start() {
  if (on() || tl_seen != nullptr) return false;
  auto seen = std::make_shared<Seen>();
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&Saw).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  owner_ = std::this_thread::get_id();
  seen_ = seen;
  tl_seen = std::move(seen);
  return true;
}

bool NestedOps::Stop() {
  if (!on()) return true;
  if (owner_ != std::this_thread::get_id()) return false;
  at::removeCallback(handle_);
  handle_ = 0;
  tl_seen.reset();
  return true;
}

const std::vector<std::string>& NestedOps::names() const { return seen_ ? seen_->names : kNone; }

}  // namespace api_tracer::aten
