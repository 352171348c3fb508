"""`speech stream`'s live display on a pipe: one line per update that changes what is shown."""

from __future__ import annotations

from speech.server.client_cli import Printer


def event(kind, committed, tentative, target=None, lag=0.3):
    e = {"type": kind, "committed": committed, "tentative": tentative, "lag": lag}
    if target:
        e["target"] = target
    return e


def test_an_update_that_changes_nothing_shown_is_not_printed_again(capsys):
    show = Printer(as_json=False)
    show(event("recognition", ["hello"], ["wor"]))
    show(event("recognition", [], ["wor"]))  # the same tentative tail: nothing new
    show(event("translation", ["hola"], [], target="es"))
    show(event("recognition", ["world."], []))
    show(event("translation", [], [], target="es", lag=None))  # the closing update of a stream
    show(event("recognition", [], []))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["heard: hello [wor]  (lag 0.30 s)", "said es: hola  (lag 0.30 s)",
                     "heard: hello world.  (lag 0.30 s)"]
