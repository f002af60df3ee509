#include "core/module_context.h"

#include <atomic>
#include <memory>

#include "core/per_thread.h"

namespace api_tracer {
namespace {

struct Paths {
  uint64_t generation;
  std::vector<std::string> names;
};

std::atomic<Paths*> g_paths{nullptr};
// Retired path tables stay alive: a thread may still hold a view of one.
std::vector<std::unique_ptr<Paths>>& Retired() {
  static auto* retired = new std::vector<std::unique_ptr<Paths>>();
  return *retired;
}

struct Stack {
  uint64_t generation = 0;
  std::vector<int> ids;
};

// This thread's stack, emptied when the paths it was built on were replaced.
Stack& MyStack(const Paths* p) {
  static thread_local Stack stack;
  uint64_t gen = p ? p->generation : 0;
  if (stack.generation != gen) {
    stack.generation = gen;
    stack.ids.clear();
  }
  return stack;
}

}  // namespace

void ModuleContext::Set(std::vector<std::string> paths) {
  auto* p = new Paths{NextGeneration(), std::move(paths)};
  Paths* old = g_paths.exchange(p, std::memory_order_acq_rel);
  if (old) Retired().emplace_back(old);
}

void ModuleContext::Clear() {
  Paths* old = g_paths.exchange(nullptr, std::memory_order_acq_rel);
  if (old) Retired().emplace_back(old);
}

void ModuleContext::Push(int id) { MyStack(g_paths.load(std::memory_order_acquire)).ids.push_back(id); }

void ModuleContext::Pop() {
  Stack& s = MyStack(g_paths.load(std::memory_order_acquire));
  if (!s.ids.empty()) s.ids.pop_back();
}

std::string_view ModuleContext::Current() {
  Paths* p = g_paths.load(std::memory_order_acquire);
  if (!p) return {};
  Stack& s = MyStack(p);
  if (s.ids.empty()) return {};
  int id = s.ids.back();
  return id >= 0 && id < static_cast<int>(p->names.size()) ? std::string_view(p->names[id]) : std::string_view();
}

}  // namespace api_tracer
