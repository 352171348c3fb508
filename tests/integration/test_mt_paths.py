"""Translation paths on the real engines: a chrF floor on 20 FLORES-101 devtest lines per path,
streamed word by word, with no committed word retracted. A path skips only when one of its Debian
Apertium pairs (or Python engines) is not installed, naming what to install; scripts/setup.sh
installs them all."""

from __future__ import annotations

import pytest

from speech.backends import default_registry
from speech.translate.bench import FLORES, bench_pair
from speech.translate.graph import missing, parse_path

# path -> simultaneous chrF floor on lines 1-20 (measured, less a margin of about 4 points)
PATHS = {
    "bergamot:en-pt,apertium:pt-es": 45.0,
    "bergamot:en-pt,apertium:pt-es,apertium:es-fr": 45.0,
    "apertium:es-pt,bergamot:pt-en": 45.0,
    "apertium:fr-es,apertium:es-pt,bergamot:pt-en": 45.0,
    "bergamot:en-pt,apertium:pt-es,apertium:es-it": 40.0,
    "bergamot:en-pt,apertium:pt-ca": 40.0,
    "bergamot:en-pt,apertium:pt-gl": 40.0,
}


@pytest.fixture(scope="module")
def registry():
    return default_registry()


@pytest.mark.parametrize("spec", list(PATHS))
def test_path_keeps_its_quality_floor_streaming(registry, spec):
    path = parse_path(spec)
    why = missing(registry, path)
    if why:
        pytest.skip(why)
    source, target = path[0].source, path[-1].target
    r = bench_pair(registry, source, target, spec, "default", 20, 0, FLORES)
    assert r["lines"] == 20
    assert r["chrf"] >= PATHS[spec], r
    assert r["committed_erasure"] == 0
    assert r["laal_words"] <= 4.5, r
