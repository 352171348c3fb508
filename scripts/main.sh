#!/usr/bin/env bash
# The main job: sets up .venv (see setup.sh), then translates a shared English recording into
# Spanish speech, printing the live transcript and translation, and writes out/translated_es.wav.
# Extra arguments go to `speech translate` (e.g. --realtime, --play, --target pt).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/speech translate ../shared/data/speech/fleurs/fleurs-en-002.ogg \
  --source en --target es --output out/translated_es.wav --log out/events.jsonl "$@"
