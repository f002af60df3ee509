// The layer profiler from Python: _C.Profiler wraps core/profiler.h and
// installs the profile observer; api_tracer.profile.Profile drives it.
#include <pybind11/stl.h>

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "aten/nested_ops.h"
#include "aten/profile_observer.h"
#include "core/profiler.h"
#include "python/bindings.h"
#include "python/pytype.h"
#include "python/hooks.h"

namespace api_tracer::python {
namespace {

class PyProfiler;

// ScopedForward(forward, scopes, profiler): put as a module's `forward` for
// the profile, it calls `forward` inside the module's scope (a shared
// module's path chosen by the thread's current scope), exiting it also when
// `forward` raises.
struct ScopedForward {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* forward;
  PyObject* owner;  // the _C.Profiler object, kept alive
  Profiler* profiler;
  std::vector<int>* scopes;
};

PyTypeObject ScopedForwardType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* ScopedForwardCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<ScopedForward*>(self);
  Profiler::Thread& thread = f->profiler->ThisThread();
  int scope = thread.PickScope(*f->scopes);
  aten::EnterForward(*f->profiler, thread, scope);
  PyObject* result = PyObject_Vectorcall(f->forward, args, nargsf, kwnames);
  aten::ExitForward(*f->profiler, thread, scope);
  return result;
}

int ScopedForwardTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<ScopedForward*>(self);
  Py_VISIT(f->forward);
  Py_VISIT(f->owner);
  return 0;
}

int ScopedForwardClear(PyObject* self) {
  auto* f = reinterpret_cast<ScopedForward*>(self);
  Py_CLEAR(f->forward);
  Py_CLEAR(f->owner);
  return 0;
}

void ScopedForwardDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  ScopedForwardClear(self);
  delete reinterpret_cast<ScopedForward*>(self)->scopes;
  Py_TYPE(self)->tp_free(self);
}

PyObject* ScopedForwardGetAttr(PyObject* self, PyObject* name) {
  return GetAttrOrWrapped(self, name, reinterpret_cast<ScopedForward*>(self)->forward);
}

PyObject* ScopedForwardWrapped(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<ScopedForward*>(self)->forward);
}

PyGetSetDef kScopedForwardGetSet[] = {
    {"__wrapped__", ScopedForwardWrapped, nullptr, "The module's own forward.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// CUDA events for each thread's DeviceTimer.
Profiler::DeviceFactory CudaBackend() {
  if (!aten::HasCudaDevice()) throw pybind11::value_error("use_cuda: this PyTorch has no CUDA device");
  return [] { return aten::MakeCudaTimerBackend(); };
}

class PyProfiler {
 public:
  PyProfiler(std::vector<int> parents, std::optional<size_t> max_spans, bool cuda)
      : profiler_(std::make_unique<Profiler>(std::move(parents), max_spans.value_or(std::numeric_limits<size_t>::max()),
                                             cuda ? CudaBackend() : nullptr)) {}
  ~PyProfiler() {
    if (running_) aten::RemoveProfileObserver();
  }

  void Start(bool memory, bool ops) {
    RaiseIfError(aten::InstallProfileObserver(profiler_.get(), memory, ops));
    running_ = true;
    profiler_->Begin(Profiler::Now());
  }
  void Stop() {
    if (!running_) return;
    profiler_->End(Profiler::Now());
    aten::RemoveProfileObserver();
    running_ = false;
    profiler_->StopDevice();  // under the GIL: forwards still running elsewhere exit untimed
    pybind11::gil_scoped_release release;  // waits for the device's last events
    profiler_->FinishDevice();
  }
  Profiler* profiler() const { return profiler_.get(); }

  Profiler::Snapshot Snapshot() const { return profiler_->Take(); }

  pybind11::list Spans() const {
    pybind11::list spans;
    for (const auto& sp : profiler_->Spans()) {
      spans.append(pybind11::make_tuple(static_cast<int>(sp.kind), sp.scope, sp.name ? sp.name : "", sp.begin, sp.end,
                                        sp.thread));
    }
    return spans;
  }

 private:
  std::unique_ptr<Profiler> profiler_;
  bool running_ = false;
};

}  // namespace

void InitProfileBindings(pybind11::module_& m) {
  InitVectorcallType(&ScopedForwardType, "api_tracer._C.ScopedForward", sizeof(ScopedForward),
                     offsetof(ScopedForward, vectorcall), "A module's forward, run inside the module's profile scope.",
                     true);
  ScopedForwardType.tp_dealloc = ScopedForwardDealloc;
  ScopedForwardType.tp_traverse = ScopedForwardTraverse;
  ScopedForwardType.tp_clear = ScopedForwardClear;
  ScopedForwardType.tp_getattro = ScopedForwardGetAttr;
  ScopedForwardType.tp_getset = kScopedForwardGetSet;
  if (PyType_Ready(&ScopedForwardType) < 0) throw pybind11::error_already_set();
  m.def(
      "scoped_forward",
      [](pybind11::object forward, std::vector<int> scopes, pybind11::object profiler) {
        PyProfiler& p = profiler.cast<PyProfiler&>();
        if (scopes.empty()) throw pybind11::value_error("scoped_forward needs at least one scope");
        auto* f = PyObject_GC_New(ScopedForward, &ScopedForwardType);
        if (!f) throw pybind11::error_already_set();
        f->vectorcall = ScopedForwardCall;
        f->forward = Py_NewRef(forward.ptr());
        f->owner = Py_NewRef(profiler.ptr());
        f->profiler = p.profiler();
        f->scopes = new std::vector<int>(std::move(scopes));
        PyObject_GC_Track(f);
        return pybind11::reinterpret_steal<pybind11::object>(reinterpret_cast<PyObject*>(f));
      },
      pybind11::arg("forward"), pybind11::arg("scopes"), pybind11::arg("profiler"),
      "A callable that runs `forward` inside a profile scope (see ScopedForward).");
  pybind11::class_<aten::NestedOps>(m, "NestedOps",
                                    "The aten operators this thread calls while it is entered, each once, in the "
                                    "order of its first call (aten/nested_ops.h).")
      .def(pybind11::init<>())
      .def("__enter__",
           [](aten::NestedOps& self) -> aten::NestedOps& {
             if (!self.Start()) throw std::runtime_error("a NestedOps is already on on this thread");
             return self;
           })
      .def("__exit__",
           [](aten::NestedOps& self, pybind11::args) {
             if (!self.Stop()) throw std::runtime_error("a NestedOps stops on the thread it started on");
           })
      .def(
          "names", [](const aten::NestedOps& self) { return self.names(); },
          "\"aten::add.Tensor\" for each operator seen, once.");
  m.def("_empty_profile_callback", &aten::SetEmptyProfileCallback, pybind11::arg("on"), pybind11::arg("ops") = true,
        "For bench/: registers (True) or removes (False) a RecordFunction callback with the profile "
        "observer's settings (with or without operators) that does nothing: the floor under Profile's cost.");
  pybind11::enum_<SpanKind>(m, "SpanKind", pybind11::arithmetic(), "What a timeline span is (Profiler.spans()).")
      .value("scope", SpanKind::kScope)
      .value("node", SpanKind::kNode)
      .value("op", SpanKind::kOp);
  using OpStats = Profiler::OpStats;
  pybind11::class_<OpStats>(m, "OpStats", "An operator's calls and time in one scope and direction.")
      .def_readonly("name", &OpStats::name)
      .def_readonly("calls", &OpStats::calls)
      .def_readonly("total_ns", &OpStats::total_ns)
      .def_readonly("self_ns", &OpStats::self_ns);
  using DirStats = Profiler::DirStats;
  pybind11::class_<DirStats>(m, "DirStats", "A scope's sums in one direction (core/profiler.h).")
      .def_readonly("calls", &DirStats::calls)
      .def_readonly("total_ns", &DirStats::total_ns)
      .def_readonly("self_ns", &DirStats::self_ns)
      .def_readonly("mem_self", &DirStats::mem_self)
      .def_readonly("mem_total", &DirStats::mem_total)
      .def_readonly("cuda_mem_self", &DirStats::cuda_mem_self)
      .def_readonly("cuda_mem_total", &DirStats::cuda_mem_total)
      .def_readonly("device_self_ns", &DirStats::device_self_ns)
      .def_readonly("device_total_ns", &DirStats::device_total_ns)
      .def_readonly("ops", &DirStats::ops);
  using Snapshot = Profiler::Snapshot;
  pybind11::class_<Snapshot>(m, "ProfileSnapshot", "What a profile measured, per scope and direction.")
      .def_readonly("forward", &Snapshot::forward)
      .def_readonly("backward", &Snapshot::backward)
      .def_readonly("block_ns", &Snapshot::block_ns)
      .def_readonly("unattributed_ns", &Snapshot::unattributed_ns)
      .def_readonly("device_untimed", &Snapshot::device_untimed);
  pybind11::class_<PyProfiler>(m, "Profiler", "Per-scope time and memory (core/profiler.h).")
      .def(pybind11::init<std::vector<int>, std::optional<size_t>, bool>(), pybind11::arg("parents"),
           pybind11::arg("max_spans") = pybind11::none(), pybind11::arg("cuda") = false)
      .def("start", &PyProfiler::Start, pybind11::arg("memory"), pybind11::arg("ops") = true)
      .def("stop", &PyProfiler::Stop)
      .def("snapshot", &PyProfiler::Snapshot)
      .def("spans", &PyProfiler::Spans)
      .def_property_readonly("dropped_spans", [](const PyProfiler& p) { return p.profiler()->dropped_spans(); });
}

}  // namespace api_tracer::python
