# api_tracer: the two commands of README.md are `make demo` and `make test`.
PY      := .venv/bin/python
BUILD   := build
TORCH_CMAKE = $(shell $(PY) -c 'import torch; print(torch.utils.cmake_prefix_path)')

.PHONY: all setup build test test-cpp test-wheel test-python lint format demo bench api-lists clean

all: build

setup: .venv/.setup-done
.venv/.setup-done: requirements.txt scripts/setup.sh
	scripts/setup.sh
	touch $@

# The core, its unit tests and the extension (into src/api_tracer/), then the
# package installed in the venv (editable: it points at src/).
build: setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DAPI_TRACER_BUILD_TESTS=ON \
	  -DPython_EXECUTABLE=$(abspath $(PY)) -DCMAKE_PREFIX_PATH="$(TORCH_CMAKE)" > $(BUILD).log 2>&1 \
	  || { cat $(BUILD).log; exit 1; }
	cmake --build $(BUILD)
	@$(MAKE) --no-print-directory .venv/.installed

# The package, installed editable (it points at src/): again when its metadata changes.
.venv/.installed: pyproject.toml setup.py
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

# pytest's planted-defect campaigns first, alone (their workers time each
# case against a --timeout of 1.5 s, which a loaded machine would pass); then
# the wheel's test beside the rest of pytest, which runs in PYTEST_WORKERS
# processes (pytest-xdist, a test file's tests in one of them, so that a
# module's fixture, a Ray cluster or a campaign, is made once; the wheel's
# build on one core), its output shown after pytest's, with the slowest tests.
FUZZ_TESTS := tests/fuzz/test_fuzz.py
PYTEST_WORKERS ?= 2
test: build lint test-cpp
	$(PY) -m pytest -q $(FUZZ_TESTS)
	@CMAKE_BUILD_PARALLEL_LEVEL=1 $(MAKE) --no-print-directory test-wheel > $(BUILD)/test-wheel.log 2>&1 & wheel=$$!; \
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=20 --ignore=$(FUZZ_TESTS); python=$$?; \
	wait $$wheel; status=$$?; cat $(BUILD)/test-wheel.log; \
	[ $$status -eq 0 ] || echo "test-wheel failed ($(BUILD)/test-wheel.log)"; \
	[ $$python -eq 0 ] && [ $$status -eq 0 ]

# The style the code keeps (pyproject.toml's [tool.ruff], .clang-format):
# `make lint` checks it (make test runs it), `make format` applies it.
PYTHON_SOURCES := src tests bench scripts examples
CXX_SOURCES = $(shell git ls-files 'csrc/*.cc' 'csrc/*.h' 'include/*.h')
lint: setup
	$(PY) -m ruff check $(PYTHON_SOURCES)
	$(PY) -m ruff format --check $(PYTHON_SOURCES)
	.venv/bin/clang-format --dry-run --Werror $(CXX_SOURCES)

format: setup
	$(PY) -m ruff check --fix $(PYTHON_SOURCES)
	$(PY) -m ruff format $(PYTHON_SOURCES)
	.venv/bin/clang-format -i $(CXX_SOURCES)

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure -j2

# The wheel as README.md builds it, from a copy of the sources in a fresh
# venv (nothing of build/ reused), installed and run outside the sources.
test-wheel: setup
	$(PY) scripts/test_wheel.py

test-python:
	$(PY) -m pytest -q

# The main job on the bundled example: trace a small model, print the files and statistics.
demo: build
	$(PY) examples/quickstart.py

bench: build
	$(PY) bench/bench_overhead.py
	$(PY) bench/bench_native.py
	$(PY) bench/bench_profile.py
	$(PY) bench/bench_fidelity.py
	$(PY) bench/bench_judge.py --pairs --cost 3 --workloads
	$(PY) bench/bench_first_sight.py
	$(PY) bench/bench_surface.py --why
	$(PY) bench/bench_fuzz.py --out /tmp/api-tracer-fuzz-bench
	$(PY) bench/bench_steer.py --out /tmp/api-tracer-steer-bench
	$(PY) bench/bench_merge.py
	$(PY) bench/bench_distributed.py
	$(PY) bench/bench_timing.py
	$(PY) bench/bench_paddle.py

# Regenerates src/api_tracer/api_list/*.yaml from the installed torch and paddle.
api-lists: build
	$(PY) -m api_tracer.api_list
	$(PY) -m api_tracer.api_list --dialect paddle

clean:
	rm -rf $(BUILD) $(BUILD).log src/api_tracer/_C*.so src/api_tracer/_build_info.py .venv/.installed
