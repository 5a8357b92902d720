"""One yes/no: CM's words, for the engine's conditions, the library and the steps."""
import pytest

from cmcontract.yesno import YesNoError, is_yes, parse_yes_no, yes_no


@pytest.mark.parametrize("value", ["yes", "YES", " on ", "true", "True", "1", 1, True])
def test_yes_words(value):
    assert is_yes(value) and parse_yes_no("CM_X", value) is True


@pytest.mark.parametrize("value", ["no", "Off", "false", "0", "", " ", 0, False])
def test_no_words(value):
    assert not is_yes(value) and parse_yes_no("CM_X", value, default=True) is False


def test_missing_is_the_default_and_not_yes():
    assert parse_yes_no("CM_X", None) is False and parse_yes_no("CM_X", None, default=True) is True
    assert not is_yes(None)


@pytest.mark.parametrize("value", ["ture", "y", "n", "maybe", "/usr/bin/gcc"])
def test_other_text_is_refused_by_the_parser_and_not_yes_to_is_yes(value):
    assert not is_yes(value)
    with pytest.raises(YesNoError, match=f"CM_X={value!r} is not a yes/no value; use yes or no"):
        parse_yes_no("CM_X", value)


def test_a_flag_is_written_yes_or_no():
    assert (yes_no(True), yes_no(False)) == ("yes", "no")
