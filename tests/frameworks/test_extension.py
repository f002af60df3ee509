"""The extension points: a dialect that writes a type its own way, a hook strategy of one's own."""

import torch

from api_tracer import APITracer, Call, PyTorchDialect, TracingHook
from support import trace_lines


class Point3:
    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


class GeoDialect(PyTorchDialect):
    """PyTorch, plus how this project's Point3 is written."""

    def serializers(self):
        return {Point3: lambda p: Call("geo.Point3", p.x, p.y, z=p.z)}


def test_dialect_serializes_a_user_type(out):
    with APITracer(
        dialect=GeoDialect(), output_path=str(out), levels=0, merge_output=True, api_list=[f"{__name__}.measure"]
    ):
        measure(Point3(1, 2.5, 3), origin=Point3(0, 0, 0))
    # (A Python function's call is written bound: its required parameters positionally.)
    assert trace_lines(out) == [f"{__name__}.measure(geo.Point3(1, 2.5, z=3), geo.Point3(0, 0, z=0))"]


def measure(p, origin):
    return p.x - origin.x


class CallCounterHook(TracingHook):
    """A strategy of our own: records calls of `measure` at level 7 by
    patching it with a Python wrapper that calls record()."""

    level = 7

    def install(self):
        import sys

        module = sys.modules[__name__]
        original = module.measure
        hook = self

        def counted(p, origin):
            hook.record("geo.measure", (p,), {"origin": origin})
            return original(p, origin)

        self.patch(module, "measure", counted)

    def uninstall(self):
        self.restore()


def test_custom_hook_strategy_records_at_its_level(out):
    original = measure
    with APITracer(dialect=GeoDialect(), output_path=str(out), levels=[1, CallCounterHook], merge_output=False):
        assert measure(Point3(5, 0, 0), Point3(1, 0, 0)) == 4
        torch.ones(1)
    assert measure is original
    assert trace_lines(out, "_level_7") == ["geo.measure(geo.Point3(5, 0, z=0), origin=geo.Point3(1, 0, z=0))"]
    assert trace_lines(out, "_level_1") == ["torch.ones(1)"]


def test_custom_hook_can_use_the_cpp_wrapper(out):
    class WrapHook(TracingHook):
        level = 5

        def install(self):
            import sys

            module = sys.modules[__name__]
            self.patch(module, "measure", self.wrap(module.measure, "geo.measure"))

        def uninstall(self):
            self.restore()

    with APITracer(dialect=GeoDialect(), output_path=str(out), levels=[WrapHook], merge_output=True):
        assert measure(Point3(2, 0, 0), origin=Point3(1, 0, 0)) == 1
    assert trace_lines(out) == ["geo.measure(geo.Point3(2, 0, z=0), origin=geo.Point3(1, 0, z=0))"]


class StopsTheTracer:
    """An argument whose serializer stops the tracer from another thread, as
    a program's other thread may at any moment the tracer runs Python code."""

    x = 0


def test_tracer_stopped_by_another_thread_while_it_runs_python_code(out):
    import threading

    class StoppingDialect(GeoDialect):
        def serializers(self):
            def stop_elsewhere(_):
                stopper = threading.Thread(target=tracer.stop)
                stopper.start()
                stopper.join()
                return Call("StopsTheTracer")

            return {**super().serializers(), StopsTheTracer: stop_elsewhere}

    tracer = APITracer(
        dialect=StoppingDialect(), output_path=str(out), levels=0, merge_output=True, api_list=[f"{__name__}.measure"]
    )
    with tracer:
        assert measure(Point3(1, 0, 0), Point3(0, 0, 0)) == 1
        assert measure(StopsTheTracer(), Point3(0, 0, 0)) == 0  # the call in flight: not recorded, not broken
        assert measure(Point3(2, 0, 0), Point3(0, 0, 0)) == 2  # after the stop: not recorded
    assert trace_lines(out) == [f"{__name__}.measure(geo.Point3(1, 0, z=0), geo.Point3(0, 0, z=0))"]
    assert (out / "api_statistics.yaml").read_text().startswith("Total APIs: 1\nTotal API calls: 1\n")
