"""Configuration files and `speech config show`: layering, origins, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from speech.cli import main
from speech.config_cmd import effective_for
from speech.configuration import load_file, render_toml
from speech.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_layers_defaults_command_file_flags(tmp_path):
    f = write(tmp_path, 'target = "pt"\nvoice = "espeak"\n[asr_options]\nupdate_s = 0.5\n'
                        '[mt_options.engine]\nthreads = 1\n[server]\nport = 9000\n')
    e = effective_for("translate", ["--config", str(f), "--target", "fr", "--device", "auto"])
    c = e.config
    assert (c.source, c.target, c.voice) == ("en", "fr", "espeak")
    assert c.stages == ("asr", "mt", "tts", "codec")
    assert c.asr_options.update_s == 0.5 and c.asr_options.device == "auto" and c.mt_options.device == "auto"
    assert c.mt_options.engine == {"threads": 1}
    assert e.origins["target"] == "--target" and e.origins["voice"] == str(f)
    assert e.origins["source"] == "default" and e.origins["stages"] == "speech translate"
    assert e.origins["asr_options.device"] == "--device"
    # A flag's default does not override the file; the command's own defaults do not either.
    s = effective_for("serve", ["--config", str(f)])
    assert s.server.port == 9000 and s.origins["server.port"] == str(f)
    assert s.config.asr_model == "whisper-base" and s.origins["asr_model"] == "default"
    assert s.config.asr_options.update_s == 0.5  # the file wins over serve's --asr-update-s default
    assert effective_for("serve", ["--config", str(f), "--port", "9100"]).server.port == 9100


def test_a_flag_given_with_its_default_value_still_wins(tmp_path):
    f = write(tmp_path, 'codec = "opus"\n')
    assert effective_for("translate", ["--config", str(f)]).config.codec == "opus"
    assert effective_for("translate", ["--config", str(f), "--codec", "pcm16"]).config.codec == "pcm16"


@pytest.mark.parametrize("text, words", [
    ("target = 5\n", ["target", "expected text", "5"]),
    ("colour = 1\n", ["colour", "unknown key", "allowed", "asr_model"]),
    ("[asr_options]\nspeed = 2\n", ["asr_options.speed", "unknown key", "update_s"]),
    ("[asr_options]\nupdate_s = -1\n", ["asr_options.update_s", "> 0.0"]),
    ("[asr_options]\ndevice = \"gpu\"\n", ["asr_options.device", "cpu, cuda, auto"]),
    ("[server]\nport = 70000\n", ["server.port", "65535"]),
    ("asr_options = 3\n", ["asr_options", "table"]),
    ("codec_rate =\n", ["not valid TOML"]),
    ("extra = {}\n", ["extra", "unknown key"]),
    ("[tts_options.pace]\nrelief_rtf = \"fast\"\n", ["tts_options.pace.relief_rtf", 'a number or "none"']),
])
def test_bad_files_are_one_line_naming_file_and_key(tmp_path, text, words, capsys):
    f = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        effective_for("serve", ["--config", str(f)])
    message = str(e.value)
    assert message.startswith(f"{f}: ") and "\n" not in message
    for w in words:
        assert w in message
    # The CLI prints it as one line and exits 2.
    assert main(["config", "show", "serve", "--config", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(f) in err


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_file(tmp_path / "nope.toml")


def test_json_files_take_the_same_keys(tmp_path):
    f = write(tmp_path, json.dumps({"voice": "espeak", "asr_options": {"device": "auto"}}), "c.json")
    assert load_file(f) == {"voice": "espeak", "asr_options.device": "auto"}


def test_show_prints_a_file_that_loads_back_to_the_same_configuration(tmp_path, capsys):
    f = write(tmp_path, '[tts_options.chunker]\nmax_words = 6\n[codec_options]\napplication = "voip"\n')
    assert main(["config", "show", "--config", str(f), "--target", "de"]) == 0
    out = capsys.readouterr().out
    assert f'application = "voip"' in out and f"# {f}" in out
    assert 'target = "de"' in out and "# --target" in out
    again = write(tmp_path, out, "again.toml")
    back = effective_for("translate", ["--config", str(again)])
    assert back.config == effective_for("translate", ["--config", str(f), "--target", "de"]).config


def test_a_level_switched_off_is_none_in_the_file_and_in_what_show_prints(tmp_path, capsys):
    """TOML has no null: "none" switches off a level that may be None, and show writes it back so."""
    f = write(tmp_path, '[tts_options.pace]\nrelief_rtf = "none"\nskip_lag_s = "None"\n')
    pace = effective_for("serve", ["--config", str(f)]).config.tts_options.pace
    assert pace == {"relief_rtf": None, "skip_lag_s": None}
    assert main(["config", "show", "serve", "--config", str(f)]) == 0
    out = capsys.readouterr().out
    assert 'pace = {relief_rtf = "none", skip_lag_s = "none"}' in out
    again = write(tmp_path, out, "again.toml")
    assert effective_for("serve", ["--config", str(again)]).config.tts_options.pace == pace


def test_show_json_and_serve_table(capsys):
    assert main(["config", "show", "serve", "--json", "--port", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["server.port"] == {"value": 0, "origin": "--port"}
    assert data["asr_options.update_s"] == {"value": 1.0, "origin": "speech serve"}  # serve's --asr-update-s
    assert data["server.resume_grace"] == {"value": 30.0, "origin": "default"}
    assert main(["config", "show"]) == 0
    assert "[server]" not in capsys.readouterr().out  # only serve shows its table


def test_show_without_action_says_how(capsys):
    assert main(["config"]) == 2
    assert "speech config show" in capsys.readouterr().err


def test_show_refuses_a_command_it_does_not_know(capsys):
    assert main(["config", "show", "serv", "--port", "9000"]) == 2  # not translate's configuration, silently
    assert "no configuration for a command 'serv': give one of translate, serve, mic, eval" in capsys.readouterr().err


def test_render_toml_comments_unset_values():
    e = effective_for("translate", [])
    text = render_toml(e)
    assert "# adaptive = (unset)" in text


def test_eval_reads_the_same_files(tmp_path):
    from speech.eval.configs import load_config

    f = write(tmp_path, 'chunk_ms = 250\n[asr_options]\nupdate_s = 0.5\n')
    c = load_config(str(f), "en", "es")
    assert c.chunk_ms == 250 and c.asr_options.update_s == 0.5 and (c.source, c.target) == ("en", "es")
    with pytest.raises(ConfigError, match="chunk_ms"):
        load_config(str(write(tmp_path, "chunk_ms = -1\n", "b.toml")), "en", "es")


def test_translate_uses_the_file_end_to_end(tmp_path):
    """`speech translate --config` fails on the file's bad voice before any model loads."""
    f = write(tmp_path, 'voice = "no-such-voice"\n')
    wav = tmp_path / "in.wav"
    import numpy as np
    import soundfile as sf

    sf.write(wav, np.zeros(1600, dtype=np.float32), 16000)
    r = subprocess.run([sys.executable, "-m", "speech.cli", "translate", str(wav), "--config", str(f)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and "no-such-voice" in r.stderr and r.stderr.count("\n") == 1


def test_eval_sweeps_typed_options():
    from speech.eval.configs import combinations, load_config, parse_sweep

    key, values = parse_sweep("asr_options.update_s=0.5,1")
    assert (key, values) == ("asr_options.update_s", [0.5, 1.0])
    combos = combinations(load_config(None, "en", "es"), [(key, values)], ["simulated"])
    assert [c.config.asr_options.update_s for c in combos] == [0.5, 1.0]
    assert [c.label for c in combos] == ["asr_options.update_s=0.5", "asr_options.update_s=1.0"]
    with pytest.raises(ConfigError, match="asr_options.device"):
        parse_sweep("asr_options.device=gpu")
    with pytest.raises(Exception, match="asr_options.update_s"):
        parse_sweep("asr_options.colour=1")


def test_server_table_takes_the_replica_and_engine_options(tmp_path):
    f = write(tmp_path, '[server]\nreplica_id = "r2"\nengine = "ray"\nray_max_replicas = 3\n')
    s = effective_for("serve", ["--config", str(f)]).server
    assert (s.replica_id, s.engine, s.ray_max_replicas) == ("r2", "ray", 3)
    assert effective_for("serve", ["--config", str(f), "--engine", "plain"]).server.engine == "plain"
    for text, key in (('replica_id = "a-1"', "server.replica_id"), ('engine = "rays"', "server.engine"),
                      ("ray_max_replicas = 0", "server.ray_max_replicas")):
        with pytest.raises(ConfigError, match=key):
            effective_for("serve", ["--config", str(write(tmp_path, f"[server]\n{text}\n", "bad.toml"))])


def test_an_engine_that_died_is_one_line_and_exit_1(monkeypatch, capsys):
    # An engine's second failure (EngineFailed) ends the command with its message, not a traceback.
    import speech.translate.cli as translate_cli
    from speech.translate.hypothesis import EngineFailed

    def dies(args):  # noqa: ANN001
        raise EngineFailed("apertium pipeline cat-eng failed (the pipeline exited)")

    monkeypatch.setattr(translate_cli, "run", dies)
    monkeypatch.delenv("SPEECH_DEBUG", raising=False)
    assert main(["translate-text", "--source", "ca", "--target", "en", "-"]) == 1
    err = capsys.readouterr().err
    assert err == "speech translate-text: error: apertium pipeline cat-eng failed (the pipeline exited)\n"


def test_translate_text_takes_the_translator_option_under_the_name_speech_translate_gives_it(monkeypatch):
    import speech.translate.cli as translate_cli

    seen = []
    monkeypatch.setattr(translate_cli, "run", lambda args: seen.append(args.backend) or 0)
    for flag in ("--mt-backend", "--backend"):
        assert main(["translate-text", flag, "apertium:es-pt,bergamot:pt-en", "--source", "es", "--target", "en", "-"]) == 0
    assert seen == ["apertium:es-pt,bergamot:pt-en"] * 2
