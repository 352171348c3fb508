"""eSpeak voice files composed at run time: attribute parsing and eSpeak's path limits."""

from __future__ import annotations

import pytest

from speech.errors import UserError
from speech.tts.espeak_voice import MAX_PATH, VoiceFiles, parse_attributes


def test_attributes_are_split_and_checked():
    assert parse_attributes(" flutter 0 ;consonants  400 400; ") == ("flutter 0", "consonants 400 400")
    assert parse_attributes("") == ()
    # eSpeak ignores an unknown line without a word: a typo must not pass silently
    with pytest.raises(UserError, match="'flutr' .* not one of"):
        parse_attributes("flutr 0")
    with pytest.raises(UserError, match="Consonants"):  # keywords are case-sensitive in eSpeak
        parse_attributes("Consonants 400 400")
    with pytest.raises(UserError, match="whole numbers"):
        parse_attributes("consonants loud")
    with pytest.raises(UserError, match="whole numbers"):
        parse_attributes("flutter")


def test_phoneme_replacements_are_checked_before_espeak_sees_them():
    assert parse_attributes("replace 00 x r; replace 03  @- NULL") == ("replace 00 x r", "replace 03 @- NULL")
    # eSpeak packs a phoneme name into 4 bytes: refuse what it would cut to another phoneme, flags
    # it does not have, and a replacement of nothing
    bad_lines = ("replace 00 x", "replace x r s", "replace 4 x r", "replace 00 abcde r", "replace", "replace 00 x ç",
                 "replace 00 NULL r")
    for bad in bad_lines:
        with pytest.raises(UserError, match="replace FLAGS PHONEME REPLACEMENT"):
            parse_attributes(bad)


def test_composed_file_has_the_base_then_the_attributes_at_a_path_espeak_can_read(tmp_path):
    data = tmp_path / "espeak-ng-data"
    (data / "lang" / "roa").mkdir(parents=True)
    (data / "lang" / "roa" / "pt-BR").write_text("name Portuguese (Brazil)\nlanguage pt-br\n")
    files = VoiceFiles(data)
    spec = files.compose(files.base_text("roa/pt-BR"), ("flutter 0", "consonants 400 400"), variant="m3")
    path, _, variant = spec.partition("+")
    assert variant == "m3"
    assert len(spec) <= MAX_PATH and path == path.lower()  # eSpeak copies 59 characters and lower-cases them
    assert open(path).read() == "name Portuguese (Brazil)\nlanguage pt-br\nflutter 0\nconsonants 400 400\n"
    assert files.compose(files.base_text("roa/pt-BR"), ("flutter 0", "consonants 400 400")) == path  # written once
    with pytest.raises(UserError, match="no voice file"):
        files.base_text("roa/xx")


def test_a_user_voice_file_must_exist_and_look_like_one(tmp_path):
    with pytest.raises(UserError, match="not found"):
        VoiceFiles.user_text(str(tmp_path / "missing"))
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\n")
    with pytest.raises(UserError, match="no 'language' line"):
        VoiceFiles.user_text(str(junk))
