"""Open an .armnn file in Netron (the `netron` PyPI package) inside headless
Chromium and save a screenshot; tests/test_netron.py uses the same helpers.

    python scripts/netron_screenshot.py [MODEL] [-o docs/images/netron.png]

MODEL is an .armnn file, or an ONNX/TFLite model that is converted first;
without it a small demo network is built with NetBuilder.

Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-separated JSON on fds 3 and 4), so nothing
beyond the standard library is needed. Two things of Netron's web page are
set up before loading: the `consent` cookie, because without it the page
waits for a click on a cookie notice; and, only if this netron release is
older than its 180-day "please update" limit, the page clock.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--remote-debugging-pipe"]

# Page state read while waiting: the body class ('default' once the graph is
# shown, 'alert'/'notification' while a message box is up), the message text,
# graph nodes, their tooltips (layer names) and labels (layer types).
STATE_JS = """JSON.stringify({
  body: document.body.className,
  message: /alert|notification/.test(document.body.className) ?
           document.getElementById('message-text').innerText : '',
  nodes: document.querySelectorAll('#canvas g.node').length,
  titles: Array.from(document.querySelectorAll('#canvas g.node title')).map(t => t.textContent),
  labels: Array.from(document.querySelectorAll('#canvas g.node text')).map(t => t.textContent)
})"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def build_demo_graph():
    """Input 1x3x16x16 -> conv (+bias) -> ReLU -> max pool, concatenated with a
    strided conv of the input -> Output."""
    import numpy as np

    sys.path.insert(0, ROOT)
    from armnn_import.ir.types import ActivationFunction, DataType, PoolingAlgorithm, TensorInfo
    from armnn_import.lowering import NetBuilder

    rng = np.random.default_rng(0)
    b = NetBuilder()
    x = b.g.add_input("image", TensorInfo((1, 3, 16, 16), DataType.Float32))
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
                 rng.standard_normal(8).astype(np.float32), "conv_main", pads=(1, 1, 1, 1))
    y = b.activation(y, ActivationFunction.ReLu, "relu_main")
    y = b.pool2d(y, PoolingAlgorithm.Max, (2, 2), "pool_main", strides=(2, 2))
    z = b.conv2d(x, rng.standard_normal((4, 3, 2, 2)).astype(np.float32), None, "conv_side", strides=(2, 2))
    b.g.add_output("features", b.concat([y, z], 1, "concat_features"))
    return b.g


def armnn_bytes(model: str | None) -> bytes:
    sys.path.insert(0, ROOT)
    from armnn_import.serialize import write

    if model is None:
        return write(build_demo_graph())
    with open(model, "rb") as f:
        data = f.read()
    if data[4:8] == b"ARMN":
        return data
    from armnn_import import api
    return api.convert(model).to_bytes()


class DevTools:
    """Minimal DevTools-protocol client over Chromium's debugging pipe."""

    def __init__(self, chromium: str, width: int, height: int):
        self.profile = tempfile.mkdtemp(prefix="netron-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def map_fds():  # the child reads commands on fd 3 and writes replies on fd 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"],
            pass_fds=(3, 4), preexec_fn=map_fds, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf, self.next_id, self.session = b"", 0, None

    def call(self, method: str, params: dict | None = None, *, browser: bool = False, timeout: float = 20.0):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not browser:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                    raise TimeoutError(f"Chromium did not answer {method}")
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium exited (code {self.proc.poll()}) during {method}")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:  # anything else is an event: not needed here
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open_page(self, width: int, height: int):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def close(self):
        with contextlib.suppress(Exception):
            self.call("Browser.close", browser=True, timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)


def netron_build_time() -> float | None:
    """The build date Netron compares with the clock (its 'date' meta tag)."""
    import netron

    with open(os.path.join(os.path.dirname(netron.__file__), "index.html"), encoding="utf-8") as f:
        m = re.search(r'<meta name="date" content="([0-9-]+ [0-9:]+)"', f.read())
    if not m:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


@contextlib.contextmanager
def netron_page(path: str, width: int = 1200, height: int = 900, timeout: float = 30.0):
    """Serve `path` with netron on 127.0.0.1, load it in headless Chromium and
    yield (devtools, state) once Netron drew the graph or showed a message."""
    import netron

    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium not found")
    host, port = netron.serve(path, None, address=("127.0.0.1", 0), browse=False)
    url = f"http://{host}:{port}/"
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(netron.stop, ("127.0.0.1", port))
        tools = DevTools(chromium, width, height)
        cleanup.callback(tools.close)
        tools.open_page(width, height)
        tools.call("Network.setCookie", {"name": "consent", "value": str(int(time.time() * 1000)), "url": url})
        built = netron_build_time()
        if built is not None and time.time() - built > 170 * 86400:
            tools.call("Emulation.setVirtualTimePolicy", {"policy": "advance", "initialVirtualTime": built + 86400})
        tools.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while True:
            state = json.loads(tools.evaluate(STATE_JS) or "{}")
            body = state.get("body", "").split()
            if "default" in body or "alert" in body or "notification" in body or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        yield tools, state


def node_properties(tools: DevTools, layer_name: str) -> dict[str, str]:
    """Click the node of a layer and read Netron's properties sidebar as
    {field: text} (type, name, descriptor attributes, inputs, outputs)."""
    found = tools.evaluate("""(() => {
      const title = Array.from(document.querySelectorAll('#canvas g.node title'))
                         .find(t => t.textContent === %s);
      if (!title) return false;
      title.parentNode.dispatchEvent(new MouseEvent('click', {bubbles: true}));
      return true; })()""" % json.dumps(layer_name))
    if not found:
        raise KeyError(f"no node for layer {layer_name!r}")
    time.sleep(0.3)  # the sidebar opens with a short transition
    return json.loads(tools.evaluate("""JSON.stringify(Object.fromEntries(
      Array.from(document.querySelectorAll('#sidebar .sidebar-item')).map(item => [
        item.querySelector('.sidebar-item-name input').value,
        (() => { const v = item.querySelector('.sidebar-item-value-list').cloneNode(true);
                 v.querySelectorAll('.sidebar-item-value-expander').forEach(e => e.remove());
                 return v.textContent.trim(); })()])))"""))


def screenshot(tools: DevTools) -> bytes:
    return base64.b64decode(tools.call("Page.captureScreenshot", {"format": "png"})["data"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help=".armnn, ONNX or TFLite file (default: a demo network)")
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "images", "netron.png"))
    ap.add_argument("--size", default="1200x900", help="viewport WIDTHxHEIGHT")
    ap.add_argument("--select", help="layer whose properties to show (default for the demo: conv_main)")
    ap.add_argument("--zoom", type=int, default=0, help="clicks on Netron's zoom-in button")
    args = ap.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        name = os.path.splitext(os.path.basename(args.model))[0] if args.model else "demo"
        path = os.path.join(tmp, name + ".armnn")
        with open(path, "wb") as f:
            f.write(armnn_bytes(args.model))
        with netron_page(path, width, height) as (tools, state):
            if not state.get("nodes"):
                print(f"Netron showed no graph: {state.get('message') or state}", file=sys.stderr)
                return 1
            for _ in range(args.zoom):
                tools.evaluate("document.getElementById('zoom-in-button').click()")
            layer = args.select or (None if args.model else "conv_main")
            if layer:
                node_properties(tools, layer)
            time.sleep(0.3)
            png = screenshot(tools)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "wb") as f:
        f.write(png)
    print(f"{args.output}: {state['nodes']} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
