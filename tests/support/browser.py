"""Headless Chromium for the tests of the HTML report: the DOM after the
page's scripts ran (`dump_dom`), and a WebDriver session through
chromedriver's W3C HTTP API (`Browser`: open, find, click, type, read,
screenshot), a small client on urllib: no dependency.

Chromium and chromedriver are Debian's `chromium` and `chromium-driver`,
which scripts/setup.sh installs; without them these tests fail, saying so.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, List, Optional

# A browser that reaches for nothing: no network of its own, no first-run
# work, no GPU, no sandbox (the tests may run as root).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference


def executable(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} is not installed: scripts/setup.sh installs Debian's chromium and "
            "chromium-driver, which the report's browser tests need"
        )
    return path


def dump_dom(page: Path, timeout: float = 60) -> str:
    """The page's DOM, serialized, once its scripts ran."""
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [executable("chromium"), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if result.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver and one session of headless Chromium in it; a
    context manager that ends both."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60) -> None:
        self.port = _free_port()
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory()
        self.driver = subprocess.Popen(
            [executable("chromedriver"), f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            self._wait_ready()
            args = FLAGS + [f"--window-size={width},{height}", f"--user-data-dir={self.profile.name}"]
            options = {"binary": executable("chromium"), "args": args}
            caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except BaseException:
            self._stop_driver()
            raise

    def _call(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as e:  # a WebDriver error: its JSON says what
            raise RuntimeError(f"{method} {path}: {e.read().decode(errors='replace')[:2000]}") from None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, RuntimeError):
                pass
            if self.driver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.05)

    def _session(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    # -- what the tests do -----------------------------------------------------

    def open(self, page: Path, fragment: str = "") -> None:
        self._session("POST", "/url", {"url": page.resolve().as_uri() + (f"#{fragment}" if fragment else "")})

    def find_all(self, css: str) -> List[str]:
        """The elements `css` selects, as references."""
        return [e[ELEMENT] for e in self._session("POST", "/elements", {"using": "css selector", "value": css})]

    def find(self, css: str) -> str:
        found = self.find_all(css)
        if not found:
            raise LookupError(f"no element matches {css!r}")
        return found[0]

    def click(self, element: str) -> None:
        self._session("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self._session("POST", f"/element/{element}/value", {"text": text})

    def text(self, element: str) -> str:
        """The element's text as rendered (what is hidden is left out)."""
        return self._session("GET", f"/element/{element}/text")

    def run(self, script: str, *args: Any) -> Any:
        """Runs `script` (a function body) in the page; returns its result."""
        return self._session("POST", "/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self._session("GET", "/screenshot")))
        return path

    # -- the end -------------------------------------------------------------------

    def _stop_driver(self) -> None:
        self.driver.terminate()
        try:
            self.driver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.driver.kill()
            self.driver.wait()
        self.profile.cleanup()

    def close(self) -> None:
        try:
            self._session("DELETE", "")
        finally:
            self._stop_driver()

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
