"""Scale-out helpers shared by the HAProxy/Ray tests and benchmarks: `speech serve` replicas on
loopback, the shipped deploy/haproxy.cfg rendered for their ports, and HAProxy run in the foreground.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HAPROXY_CFG = REPO / "deploy" / "haproxy.cfg"
FAKE_PIPELINE = "tests.unit.test_server_fakes:make_fake_factory"
# The addresses deploy/haproxy.cfg ships with: the front end, then replicas r1, r2.
SHIPPED_BIND = "127.0.0.1:8760"
SHIPPED_REPLICAS = ("127.0.0.1:8801", "127.0.0.1:8802")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0, headers: dict | None = None) -> tuple[int, dict | str]:
    """(status, JSON body or text); HTTP errors are answers too. `headers`: filled with the reply's (names in lower case)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            status, body, reply = r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        status, body, reply = e.code, e.read(), e.headers
    if headers is not None:
        headers.update((k.lower(), v) for k, v in reply.items())  # proxies may change the case
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


class ReplicaProcess:
    """`speech serve --replica-id ID` on 127.0.0.1 with a free port (fake pipeline unless `real`)."""

    def __init__(self, replica_id: str, *args: str, real: bool = False) -> None:
        self.replica_id = replica_id
        pipeline = [] if real else ["--pipeline", FAKE_PIPELINE, "--warm-up", "none"]
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "speech.cli", "serve", "--host", "127.0.0.1", "--port", "0",
             "--replica-id", replica_id, *pipeline, *args],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on ws://127\.0\.0\.1:(\d+)/ws", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"speech serve {replica_id} did not start (said {line!r})")
        self.port = int(m.group(1))
        self.url = f"ws://127.0.0.1:{self.port}/ws"

    def metrics(self) -> dict:
        status, body = http_get(f"http://127.0.0.1:{self.port}/metrics")
        assert status == 200, body
        return body  # type: ignore[return-value]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def render_haproxy(bind_port: int, replica_ports: list[int], template: Path = HAPROXY_CFG) -> str:
    """The shipped configuration with its addresses replaced (two replicas, r1 and r2)."""
    if len(replica_ports) != len(SHIPPED_REPLICAS):
        raise ValueError(f"deploy/haproxy.cfg names {len(SHIPPED_REPLICAS)} replicas, got {len(replica_ports)} ports")
    text = template.read_text()
    for shipped in (SHIPPED_BIND, *SHIPPED_REPLICAS):
        if shipped not in text:
            raise ValueError(f"{template}: address {shipped} not found; keep the shipped addresses")
    text = text.replace(SHIPPED_BIND, f"127.0.0.1:{bind_port}")
    for shipped, port in zip(SHIPPED_REPLICAS, replica_ports):
        text = text.replace(shipped, f"127.0.0.1:{port}")
    return text


class HaproxyProcess:
    """HAProxy in the foreground (-db) with `config`; `ready()` waits until a replica is up."""

    def __init__(self, config: str, workdir: Path, bind_port: int) -> None:
        exe = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
        if exe is None:
            raise FileNotFoundError("haproxy is not installed (apt-get install haproxy; scripts/setup.sh --test)")
        self.cfg = workdir / "haproxy.cfg"
        self.cfg.write_text(config)
        self.port = bind_port
        self.url = f"ws://127.0.0.1:{bind_port}/ws"
        self.log = workdir / "haproxy.log"
        self._log = self.log.open("w")
        self.proc = subprocess.Popen([exe, "-db", "-f", str(self.cfg)], stdout=self._log, stderr=subprocess.STDOUT)

    def ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                status, _ = http_get(f"http://127.0.0.1:{self.port}/healthz", timeout=1.0)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"haproxy on port {self.port} never routed /healthz: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
