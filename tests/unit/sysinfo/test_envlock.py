"""sysinfo/envlock.py without a subprocess: pip's install report read (hashes in both of pip's
forms, a folder install without one), merged into a venv's lock file, refused where the venv is not
ours, a damaged lock named, and written as pip's --require-hashes requirements."""
import json

import pytest

from mlperf_llm.sysinfo import envlock
from mlperf_llm.sysinfo.pyenv import DONE_MARK

SHA = "ab" * 32


def report(tmp_path, *items, name="report.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": "1", "install": list(items)}))
    return str(path)


def item(name, version, **info):
    return {"metadata": {"name": name, "version": version}, "download_info": info}


def test_a_report_gives_each_installed_distribution_its_version_hash_and_source(tmp_path):
    got = envlock.from_report(report(
        tmp_path,
        item("six", "1.17.0", url="file:///opt/pypi/six.whl", archive_info={"hashes": {"sha256": SHA}}),
        item("old-style", "2.0", url="https://x/o.whl", archive_info={"hash": "sha256=" + "cd" * 32}),
        item("mine", "0.1", url="file:///src/mine", dir_info={}),
        {"metadata": {"name": ""}}))
    assert got == [envlock.Locked("six", "1.17.0", SHA, "file:///opt/pypi/six.whl"),
                   envlock.Locked("old-style", "2.0", "cd" * 32, "https://x/o.whl"),
                   envlock.Locked("mine", "0.1", "", "file:///src/mine", "a folder, not an archive")]
    with pytest.raises(envlock.LockError, match="unreadable .*install again"):
        envlock.from_report(str(tmp_path / "missing.json"))


def test_installs_merge_into_the_lock_of_a_venv_of_ours_and_never_elsewhere(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = str(venv / "bin" / "python")
    assert envlock.record_install(python, report(tmp_path, item("a", "1", archive_info={"hashes": {"sha256": SHA}})))\
        is None and not (venv / envlock.LOCK_NAME).exists()          # no completion mark: not our venv
    (venv / DONE_MARK).write_text("/usr/bin/python3\n")
    path = envlock.record_install(python, report(tmp_path, item("A_b", "1", archive_info={"hashes": {"sha256": SHA}})))
    envlock.record_install(python, report(tmp_path, item("a.b", "2", archive_info={"hashes": {"sha256": "ef" * 32}}),
                                          item("c", "3", archive_info={"hashes": {"sha256": SHA}}), name="r2.json"))
    entries = envlock.load(path)
    assert {k: (d.name, d.version, d.sha256) for k, d in entries.items()} == {
        "a-b": ("a.b", "2", "ef" * 32), "c": ("c", "3", SHA)}            # the newer install of a-b replaced it
    assert json.loads((venv / envlock.LOCK_NAME).read_text())["format"] == envlock.LOCK_FORMAT
    envlock.record_install(python, report(tmp_path, item("C__", "4", archive_info={"hashes": {"sha256": SHA}}),
                                          item("a_-.B", "5", archive_info={"hashes": {"sha256": SHA}}), name="r3.json"))
    assert {k: d.version for k, d in envlock.load(path).items()} == {"a-b": "5", "c": "3", "c-": "4"}   # PEP 503 names
    (venv / envlock.LOCK_NAME).write_text("{not json")
    with pytest.raises(envlock.LockError, match="is not a lock file of this project .*install again"):
        envlock.load(path)


def test_a_wheel_built_here_from_a_source_archive_is_locked_as_the_archive_fetched(tmp_path):
    """pip_install_locked builds rouge-score's wheel from its source archive and installs that wheel:
    the lock names the source archive (its sha256 is the index's; the built wheel's is this
    machine's, and no index serves it), so an image or another venv made from the lock can fetch it."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / DONE_MARK).write_text("/usr/bin/python3\n")
    python = str(venv / "bin" / "python")
    built = "ab" * 32
    path = envlock.record_install(python, report(
        tmp_path, item("rouge_score", "0.1.2", archive_info={"hashes": {"sha256": built}}),
        item("six", "1.17.0", archive_info={"hashes": {"sha256": SHA}})),
        fetched=(envlock.Locked("rouge-score", "0.1.2", "cd" * 32, "https://files/rouge_score-0.1.2.tar.gz"),
                 envlock.Locked("six", "1.17.0", SHA), envlock.Locked("other", "1", "ef" * 32)))
    entries = envlock.load(path)
    assert {k: (d.name, d.version, d.sha256) for k, d in entries.items()} == {
        "rouge-score": ("rouge_score", "0.1.2", "cd" * 32), "six": ("six", "1.17.0", SHA)}   # only what pip installed
    assert entries["rouge-score"].url == "https://files/rouge_score-0.1.2.tar.gz"


def test_the_lock_as_requirements_puts_what_has_no_hash_apart():
    text = envlock.requirements([envlock.Locked("six", "1.17.0", SHA), envlock.Locked("pip", "23.2.1", note=envlock.NO_HASH)])
    assert text == (f"six==1.17.0 --hash=sha256:{SHA}\n"
                    f"# pip==23.2.1  ({envlock.NO_HASH})\n")


def test_a_lock_is_read_back_and_anything_but_exact_pins_with_hashes_is_refused():
    entries = [envlock.Locked("six", "1.17.0", SHA), envlock.Locked("pip", "23.2.1", note="venv's own")]
    assert envlock.parse(envlock.requirements(entries)) == [envlock.Locked("six", "1.17.0", SHA)]
    for line in ("six>=1.0 --hash=sha256:" + SHA, "--index-url http://evil/", "six==1.17.0",
                 "six==1.17.0 --hash=sha256:" + SHA + " --extra-index-url http://e", "https://x/six.whl"):
        with pytest.raises(envlock.LockError, match="line 1: .* is not 'name==version --hash=sha256"):
            envlock.parse(line + "\n", "their lock")
