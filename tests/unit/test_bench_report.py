"""`speech bench report`: every figure on the page comes with its command, date and machine."""

from __future__ import annotations

import json

from speech import benchreport


def test_page_shows_stored_figures_with_their_command(tmp_path, monkeypatch):
    monkeypatch.setattr(benchreport, "RESULTS", tmp_path)
    (tmp_path / "longtalk.x86-64.json").write_text(json.dumps({
        "command": "speech bench s2st --long 10 --pairs en-es --json", "date": "2026-12-01 05:00 UTC",
        "machine": {"cores": 2, "processor": "x86_64", "memory_gb": 23.4, "load_average": [0.5, 0.4, 0.3]},
        "results": [{"pair": "en-es", "control": "on", "listener_lag_p50_s": 3.2, "listener_lag_p90_s": 4.4,
                     "listener_lag_p90_s_per_minute": [4.0, 4.9, 4.1], "listener_lag_slope_s_per_min": 0.02,
                     "end_offset_s": 3.1, "duration_ratio": 0.91, "share_words_dropped": 0.01,
                     "lag_parts_s": {"committed": 2.0, "synthesis": 0.3, "queue": 0.6, "in_chunk": 0.5},
                     "lag_parts_s_above_p90": {"committed": 2.7, "synthesis": 0.1, "queue": 1.1, "in_chunk": 0.6}}],
    }))
    text = benchreport.render(tmp_path / "page.md")
    assert "| en-es | on | 3.20 / 4.40 s | 4.90 s | 0 of 3 | 0.02 s/min | 3.10 s | 0.91 | 1.0 % |" in text
    # where the lag goes: every word / the slowest tenth, per part
    assert "| pair | control | until committed | until the first sample | behind earlier speech | place in the chunk |" in text
    assert "| en-es | on | 2.00 / 2.70 | 0.30 / 0.10 | 0.60 / 1.10 | 0.50 / 0.60 |" in text
    assert "`speech bench s2st --long 10 --pairs en-es --json`, 2026-12-01 05:00 UTC; 2 cores" in text
    # a headline never measured says how to measure it, and shows no figure
    assert "Not measured yet: `speech bench report --run asr`." in text
    # a result stored without versions says so rather than implying today's
    assert "at the start; versions not recorded.*" in text


def test_the_end_to_end_table_says_where_the_start_goes_when_the_run_measured_it(tmp_path, monkeypatch):
    monkeypatch.setattr(benchreport, "RESULTS", tmp_path)
    row = {"pair": "en-es", "start_offset_s": 2.8, "end_offset_s": 2.7, "listener_lag_p50_s": 3.4,
           "listener_lag_p90_s": 4.1, "roundtrip_wer": 0.078, "realtime_ok": True}
    parts = {"recognizer": 1.8, "translator": 0.6, "chunker": 0.3, "synthesis": 0.1}
    (tmp_path / "s2st.x86-64.json").write_text(json.dumps({
        "command": "speech bench s2st --limit 10 --json", "date": "2026-12-01 05:00 UTC",
        "machine": {"cores": 2, "processor": "x86_64", "memory_gb": 23.4, "load_average": [0.5, 0.4, 0.3]},
        "results": [{**row, "start_parts_s": parts}, {**row, "pair": "pt-en"}]}))  # pt-en: stored before the parts
    text = benchreport.render(tmp_path / "page.md")
    assert "| en-es | 2.80 s | 2.70 s | 3.40 / 4.10 s | 7.8 % | yes |" in text
    assert "| en-es | 1.80 s | 0.60 s | 0.30 s | 0.10 s |" in text
    assert "| pt-en | 2.80 s" in text and "| pt-en | 1.80 s" not in text

def test_a_measured_headline_is_stored_with_its_machine_and_versions(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setattr(benchreport, "RESULTS", tmp_path)
    asked, real_run = [], subprocess.run

    def fake_run(cmd, **kwargs):  # the benchmark itself is faked; git and dpkg-query answer for real
        if "speech.cli" not in cmd:
            return real_run(cmd, **kwargs)
        asked.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps({"configs": []}))

    monkeypatch.setattr(benchreport.subprocess, "run", fake_run)
    headline = next(h for h in benchreport.HEADLINES if h.name == "asr")
    path = benchreport.run_one(headline)
    stored = json.loads(path.read_text())
    assert asked[0][-1] == "--json" and stored["results"] == {"configs": []}
    assert stored["machine"]["cores"] >= 1 and stored["machine"]["cpu"]
    assert stored["machine"]["vector"]  # x86 and ARM name their SIMD in /proc/cpuinfo
    assert path == tmp_path / f"asr.{benchreport.machine_slug(stored['machine'])}.json"
    assert stored["versions"]["numpy"] and stored["versions"]["python"]
    text = benchreport.render(tmp_path / "page.md")
    assert f"numpy {stored['versions']['numpy']}.*" in text


def _long(date: str, machine: dict, p90: float) -> str:
    return json.dumps({"command": "speech bench s2st --long 10 --pairs en-pt --json", "date": date, "machine": machine,
                       "results": [{"pair": "en-pt", "control": "on", "listener_lag_p50_s": 4.0, "listener_lag_p90_s": p90,
                                    "listener_lag_p90_s_per_minute": [p90], "listener_lag_slope_s_per_min": 0.0,
                                    "end_offset_s": 3.0, "duration_ratio": 0.8, "share_words_dropped": 0.0}]})


def test_each_kind_of_machine_keeps_its_own_figures_newest_first(tmp_path, monkeypatch):
    """2 cores with AVX-512 VNNI run the int8 models faster than 2 with AVX2 alone: a run on one
    machine must not replace, nor be mistaken for, the other's."""
    monkeypatch.setattr(benchreport, "RESULTS", tmp_path)
    amd = {"cpu": "AMD EPYC", "vector": "AVX2", "cores": 2, "memory_gb": 23.5, "load_average": [0.4, 0.3, 0.2]}
    xeon = {"cpu": "Intel(R) Xeon(R) Processor", "vector": "AVX-512 VNNI AMX", "cores": 2, "memory_gb": 23.5,
            "load_average": [0.9, 1.0, 1.1]}
    assert benchreport.machine_slug(amd) == "amd-epyc-avx2"
    assert benchreport.machine_slug(xeon) == "intel-xeon-avx-512-vnni-amx"
    (tmp_path / "longtalk.amd-epyc-avx2.json").write_text(_long("2026-12-06 15:20 UTC", amd, 5.69))
    (tmp_path / "longtalk.intel-xeon-avx-512-vnni-amx.json").write_text(_long("2026-12-07 00:20 UTC", xeon, 4.81))
    (tmp_path / "longtalk_server_en-pt.json").write_text("{}")  # another benchmark's file, not a machine's run
    text = benchreport.render(tmp_path / "page.md")
    xeon_row, amd_row = text.index("| en-pt | on | 4.00 / 4.81 s"), text.index("| en-pt | on | 4.00 / 5.69 s")
    assert xeon_row < text.index("2 cores (Intel(R) Xeon(R) Processor, AVX-512 VNNI AMX)") < amd_row
    assert amd_row < text.index("2 cores (AMD EPYC, AVX2), 23.5 GB")
