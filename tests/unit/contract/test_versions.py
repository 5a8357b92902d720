"""One version ordering and CM's constraints, for the engine's version choice, the library and the steps."""
import pytest

from cmcontract.versions import Constraint, compare, parse


@pytest.mark.parametrize("older, newer", [("3.9", "3.11.7"), ("0.32.0rc1", "0.32.0"), ("0.32.0", "0.32.0.1"),
                                          ("1.0.0rc1", "1.0.0rc2"), ("4.1.30", "5.1.0"), ("5.0", "5.0.1")])
def test_order(older, newer):
    assert compare(older, newer) == -1 and compare(newer, older) == 1


def test_equal_and_parsed():
    assert compare("3.11", "3.11") == 0
    assert parse("0.32.0rc1") == (0, 32, 0, "rc1")


def test_constraints():
    c = Constraint(version_min="3.10", version_max="3.12.99")
    assert c.allows("3.11.7") and not c.allows("3.9.1") and not c.allows("3.13.0")
    assert Constraint(version="4.1").allows("4.1.3") and not Constraint(version="4.1").allows("4.10")
    assert not Constraint() and Constraint().allows("1") and Constraint().describe() == "any version"
    assert c.describe() == ">= 3.10, <= 3.12.99"
    assert c.env() == {"CM_VERSION_MIN": "3.10", "CM_VERSION_MAX": "3.12.99"}
