#include "python/session.h"

#include <algorithm>

#include "aten/ivalue_key.h"
#include "aten/observer.h"
#include "core/module_context.h"

namespace api_tracer::python {
namespace {

Session* g_session = nullptr;
uint64_t g_epochs = 0;

}  // namespace

HookThreadState& CurrentThread() {
  static thread_local HookThreadState state;
  return state;
}

Session* Session::Active() { return g_session; }

Status Session::Start(const TraceOptions& options, const DialectHooks& dialect) {
  if (g_session) return Status::FailedPrecondition("a tracer is already running in this process");
  const auto& levels = options.levels;
  if (std::find(levels.begin(), levels.end(), kNativeLevel) != levels.end() && aten::ObserverInstalled()) {
    // Checked before the output is opened: the running one may write there.
    return Status::FailedPrecondition("the native observer (level 3) is already running (a C++ api_tracer::Tracer?)");
  }
  std::unique_ptr<Recorder> recorder;
  Status st = Recorder::Open(options, &recorder);
  if (!st.ok()) return st;
  g_session = new Session(dialect, std::move(recorder), ++g_epochs);
  SetActiveConverter(&g_session->converter_);
  return Status::OK();
}

void Session::RemoveObserver() {
  Pin pin(this);
  PyThreadState* saved = PyEval_SaveThread();
  aten::RemoveObserver(recorder_.get());
  PyEval_RestoreThread(saved);
}

Status Session::Stop() {
  Session* s = g_session;
  if (!s) return Status::OK();
  g_session = nullptr;
  SetActiveConverter(nullptr);
  Pin pin(s);  // freed when this and every other pin are gone
  s->stopped_ = true;
  s->RemoveObserver();  // if level 3's hook did not remove it already
  return s->recorder_->Close();
}

void Session::AbandonAfterFork() {
  aten::AbandonObserverAfterFork();
  ModuleContext::Clear();
  g_session = nullptr;  // left as it is: destroying it would flush the parent's buffers
  SetActiveConverter(nullptr);
}

Session::Session(const DialectHooks& dialect, std::unique_ptr<Recorder> recorder, uint64_t epoch)
    : recorder_(std::move(recorder)),
      epoch_(epoch),
      merges_(recorder_->options().merge_output && recorder_->options().levels.size() > 1),
      filter_(recorder_->options().include_apis, recorder_->options().exclude_apis),
      converter_(dialect.classify, dialect.tensor_type_name, recorder_->options().value_ranges,
                 recorder_->options().float_profiles(), recorder_->options().show_device),
      resolve_(Borrow(dialect.resolve)) {
  const TraceOptions& options = recorder_->options();
  for (int level : options.levels) levels_[level] = true;
  if (options.record_stack) {
    stacks_ = std::make_unique<StackCapture>(options.stack_format, dialect.stack_skip_prefixes);
  }
}

Session::~Session() = default;

Session::ApiEntry Session::Name(PyObject* func) {
  pybind11::object named;
  if (resolve_) {
    Suspend suspend;  // the dialect's Python code runs here
    named = Steal(PyObject_CallOneArg(resolve_.ptr(), func));
  }
  ApiEntry entry;
  if (named && PyTuple_Check(named.ptr()) && PyTuple_GET_SIZE(named.ptr()) == 3) {
    PyObject* api = PyTuple_GET_ITEM(named.ptr(), 0);
    PyObject* target = PyTuple_GET_ITEM(named.ptr(), 1);
    PyObject* op = PyTuple_GET_ITEM(named.ptr(), 2);
    if (const char* s = PyUnicode_Check(api) ? PyUnicode_AsUTF8(api) : nullptr) {
      entry.id = Intern(s);
      entry.included = filter_.Allows(s);
    }
    if (target != func && PyCallable_Check(target)) entry.target = Borrow(target);
    if (PyTuple_Check(op) && PyTuple_GET_SIZE(op) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(op, 0)) &&
        PyUnicode_Check(PyTuple_GET_ITEM(op, 1))) {
      entry.op =
          aten::OpSignature::Find(PyUnicode_AsUTF8(PyTuple_GET_ITEM(op, 0)), PyUnicode_AsUTF8(PyTuple_GET_ITEM(op, 1)));
    }
  }
  PyErr_Clear();
  return entry;
}

const Session::ApiEntry* Session::Resolve(PyObject* func, ApiEntry* uncached) {
  if (Py_TYPE(func) == &_PyMethodWrapper_Type) return ResolveAccessor(func, uncached);
  if (auto it = apis_.find(func); it != apis_.end()) return &it->second;
  ApiEntry entry = Name(func);
  // Another thread may have added one while the dialect's Python code ran:
  // that one stays. The key holds `func`, so its address is never reused.
  return &apis_.try_emplace(Borrow(func), std::move(entry)).first->second;
}

const Session::ApiEntry* Session::ResolveAccessor(PyObject* func, ApiEntry* uncached) {
  // A method-wrapper (a property's bound __get__, say) is a new object at
  // every access: key it by the descriptor it belongs to, which lives on.
  static PyObject* const kSelf = PyUnicode_InternFromString("__self__");
  static PyObject* const kName = PyUnicode_InternFromString("__name__");
  pybind11::object self = Steal(PyObject_GetAttr(func, kSelf));
  pybind11::object name = Steal(PyObject_GetAttr(func, kName));
  PyErr_Clear();
  int which = -1;
  if (self && name && PyUnicode_Check(name.ptr()) &&
      (Py_TYPE(self.ptr()) == &PyGetSetDescr_Type || Py_TYPE(self.ptr()) == &PyMemberDescr_Type ||
       PyObject_TypeCheck(self.ptr(), &PyProperty_Type))) {
    which = PyUnicode_CompareWithASCIIString(name.ptr(), "__get__") == 0   ? 0
            : PyUnicode_CompareWithASCIIString(name.ptr(), "__set__") == 0 ? 1
                                                                           : 2;
  }
  if (which < 0) {  // not a descriptor's accessor: nothing stable to key on
    *uncached = Name(func);
    return uncached;
  }
  if (auto it = accessors_.find(self); it != accessors_.end() && it->second[which]) {
    return &*it->second[which];
  }
  ApiEntry entry = Name(func);
  // Another thread may have named it while the dialect's Python code ran:
  // that one stays.
  std::optional<ApiEntry>& slot = accessors_[self][which];
  if (!slot) slot = std::move(entry);
  return &*slot;
}

void Session::Record(int level, ApiId api, const CallArgs& args) {
  HookThreadState& ts = CurrentThread();
  ts.key.Clear();
  {
    // The converter may call the dialect's Python code, with RecordFunction
    // off (convert.cc): recording alone is suspended around the whole call.
    SuspendRecording suspend;
    converter_.WriteCall(api, args, &ts.key);
  }
  if (stopped_) return;  // by another thread, while the converter ran Python code
  if (!recorder_->Record(ts.key, {.level = level, .module = ModuleContext::Current()})) return;
  if (stacks_) {
    SuspendRecording suspend;  // reads Python frames: runs no operator
    stacks_->Offer(recorder_.get(), level, api);
  }
}

}  // namespace api_tracer::python
