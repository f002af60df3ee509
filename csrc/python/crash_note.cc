// The replay crash note. While `api-tracer replay` runs configs in its own
// process, a fatal signal (abort, segfault, bus error, floating-point trap,
// illegal instruction) first says on stderr which config was running and how
// far the replay got, and appends that config's line to the JSON-lines
// report; then the handler that was there before (Python's faulthandler, if
// enabled, else the default action) takes the signal, so the process still
// dies by it.
//
// The handler calls only write(2), sigaction(2) and raise(3), which are
// async-signal-safe: Python formats the texts before each config, one pair
// per signal, and they are kept here. It runs on a stack of its own
// (sigaltstack), so a stack overflow is reported too. Install and uninstall
// from the thread that runs the configs (an alternate stack is per thread).
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "python/bindings.h"

namespace api_tracer::python {
namespace {

constexpr std::array<int, 5> kSignals = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};

struct Note {
  std::string message;      // for stderr
  std::string report_line;  // for the report
};
using Notes = std::array<Note, kSignals.size()>;

struct State {
  // Two sets: Set fills the one the handler does not read, then makes it
  // current, so a handler never reads a note being written.
  std::array<Notes, 2> notes;
  std::atomic<int> current{0};
  int report_fd = -1;
  bool installed = false;
  std::array<struct sigaction, kSignals.size()> previous{};
  stack_t previous_stack{};
  std::unique_ptr<char[]> stack;
};

State& GetState() {
  static State* state = new State();  // never destroyed: a signal may come during exit
  return *state;
}

int IndexOf(int sig) {
  for (size_t i = 0; i < kSignals.size(); ++i) {
    if (kSignals[i] == sig) return static_cast<int>(i);
  }
  return -1;
}

void WriteAll(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void OnFatalSignal(int sig, siginfo_t*, void*) {
  State& state = GetState();
  int i = IndexOf(sig);
  if (i < 0) return;
  const Note& note = state.notes[state.current.load(std::memory_order_acquire)][i];
  WriteAll(STDERR_FILENO, note.message);
  if (state.report_fd >= 0) WriteAll(state.report_fd, note.report_line);
  sigaction(sig, &state.previous[i], nullptr);
  // Blocked while this handler runs: the previous handler takes it as soon
  // as this one returns (a faulting instruction would fault again anyway).
  raise(sig);
}

[[noreturn]] void ThrowErrno(const char* what) {
  PyErr_SetFromErrnoWithFilename(PyExc_OSError, what);
  throw pybind11::error_already_set();
}

void Install(int report_fd) {
  State& state = GetState();
  if (state.installed) throw std::runtime_error("the replay crash note is installed already");
  size_t size = std::max<size_t>(SIGSTKSZ, 64 * 1024);
  state.stack.reset(new char[size]);
  stack_t stack{};
  stack.ss_sp = state.stack.get();
  stack.ss_size = size;
  if (sigaltstack(&stack, &state.previous_stack) != 0) ThrowErrno("sigaltstack");
  struct sigaction action{};
  action.sa_sigaction = OnFatalSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (auto& notes : state.notes) notes = Notes{};
  state.report_fd = report_fd;
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &state.previous[i]);
  state.installed = true;
}

void Uninstall() {
  State& state = GetState();
  if (!state.installed) return;
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &state.previous[i], nullptr);
  stack_t current{};
  sigaltstack(nullptr, &current);
  if (current.ss_sp == state.stack.get()) {  // still ours: the previous stack comes back
    state.previous_stack.ss_flags &= SS_DISABLE;
    sigaltstack(&state.previous_stack, nullptr);
  }
  state.stack.reset();
  state.report_fd = -1;
  state.installed = false;
}

// {signal: (message, report_line)}; the signals left out write nothing.
void Set(const std::map<int, std::pair<std::string, std::string>>& notes) {
  State& state = GetState();
  int next = 1 - state.current.load(std::memory_order_relaxed);
  Notes& fill = state.notes[next];
  fill = Notes{};
  for (const auto& [sig, texts] : notes) {
    int i = IndexOf(sig);
    if (i < 0) throw pybind11::value_error("signal " + std::to_string(sig) + " is not one the crash note handles");
    fill[i] = Note{texts.first, texts.second};
  }
  state.current.store(next, std::memory_order_release);
}

}  // namespace

void InitCrashNote(pybind11::module_& m) {
  pybind11::tuple signals(kSignals.size());
  for (size_t i = 0; i < kSignals.size(); ++i) signals[i] = pybind11::int_(kSignals[i]);
  m.attr("replay_crash_signals") = signals;
  m.def("replay_crash_note_install", &Install, pybind11::arg("report_fd") = -1,
        "Handles the fatal signals (replay_crash_signals) on an alternate stack: each writes its note, then "
        "the previous handler takes it. report_fd: where report lines go (-1: none).");
  m.def("replay_crash_note_set", &Set, pybind11::arg("notes"),
        "What a fatal signal writes now: {signal: (message for stderr, line for the report)}; {} for nothing.");
  m.def("replay_crash_note_uninstall", &Uninstall,
        "Puts back the handlers and the alternate stack that were there before install.");
}

}  // namespace api_tracer::python
