"""Helper processes the engines keep running (Apertium's pipelines, Festival): ending them."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process(box: list) -> None:
    """End `box[0]` (a Popen started with `start_new_session=True`, or None): end of input first, as
    programs that read stdin exit on their own, then SIGKILL to its whole session."""
    proc = box[0]
    if proc is None:
        return
    exited = proc.poll() is not None
    try:
        proc.stdin.close()
        if not exited:
            proc.wait(timeout=1)
            return
    except (OSError, subprocess.TimeoutExpired):
        pass
    # Still running, or bash is gone (killed) while programs of its group may live on.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
