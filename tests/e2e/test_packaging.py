"""`pip install .` builds a wheel whose `speech` command works outside the repository.

The wheel is built from a copy of the checkout's files (tracked and new, not ignored: what a clean
checkout holds) without touching the network (`--no-deps --no-build-isolation`), installed with
`--no-deps` into a fresh virtual environment that sees the engines already installed beside it
(their site-packages folder is added by a .pth file; the project's own editable install there is
not imported), and run from a folder outside the repository.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO

pytestmark = pytest.mark.slow


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout")
    tmp = tmp_path_factory.mktemp("pkg")
    files = run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"]).stdout.split("\0")
    src = tmp / "src"
    for name in filter(None, files):
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    wheels = tmp / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    wheel = next(wheels.glob("speech_s2st-*.whl"))
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    py = venv / "bin" / "python"
    site = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    # The engines (faster-whisper, cyllama, the embedded models) of the environment running the tests.
    (site / "engines.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    outside = tmp / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPEECH_DATA")}
    env.update(OMP_WAIT_POLICY="PASSIVE", PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return venv, outside, env, wheel


def test_the_wheel_holds_the_package_and_the_page(installed):
    import zipfile

    names = zipfile.ZipFile(installed[3]).namelist()
    for module in ("speech/__init__.py", "speech/api.py", "speech/asr/stage.py", "speech/translate/stage.py",
                   "speech/tts/stage.py", "speech/codecs/stage.py", "speech/models/whisper.py", "speech/demo/mic.py"):
        assert module in names
    assert any(n.startswith("speech/demo/static/") for n in names)
    assert not any(n.startswith(("tests/", "speech/tests/")) for n in names)


def test_speech_runs_outside_the_repository(installed):
    venv, outside, env, _ = installed
    speech = str(venv / "bin" / "speech")
    r = run([speech, "--help"], cwd=outside, env=env)
    assert "translate" in r.stdout and "doctor" in r.stdout
    where = run([str(venv / "bin" / "python"), "-c", "import speech; print(speech.__file__)"], cwd=outside, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout  # the wheel, not the checkout
    clip = DATA / "speech" / "leopard" / "test.wav"
    if not clip.exists():
        pytest.skip("../shared/data is not beside the repository")
    r = run([speech, "translate", str(clip), "--asr-model", "whisper-tiny.en", "--voice", "espeak", "-o", "out.wav",
             "--quiet"], cwd=outside, env=env)
    assert (outside / "out.wav").stat().st_size > 10_000


def test_shared_data_comes_from_the_environment(installed):
    venv, outside, env, _ = installed
    speech = str(venv / "bin" / "speech")
    if not (DATA / "text" / "flores101").exists():
        pytest.skip("../shared/data is not beside the repository")
    bench = [speech, "bench", "mt", "--pairs", "en-es", "--backends", "apertium", "--lines", "2", "--shots", "0"]
    missing = subprocess.run(bench, capture_output=True, text=True, cwd=outside, env=env, timeout=300)
    assert missing.returncode != 0 and "flores101" in missing.stderr and "Traceback" not in missing.stderr
    r = run(bench, cwd=outside, env={**env, "SPEECH_DATA": str(DATA)}, timeout=300)
    assert "en-es" in r.stdout
