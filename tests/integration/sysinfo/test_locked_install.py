"""pyenv.pip_install_locked with the real pip: a venv made exactly from a lock (each archive by its
hash, nothing resolved, the venv's own lock written), and a lock that cannot be had as recorded
(another archive behind the hash, a version the index does not have) refused naming each package,
with nothing installed."""
import hashlib
import os
import subprocess
import sys

import pytest

from mlperf_llm.sysinfo import envlock, pyenv


@pytest.fixture(scope="module")
def six_wheel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("six")
    res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                          "six==1.17.0", "-d", str(folder)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    wheel, = folder.iterdir()
    return hashlib.sha256(wheel.read_bytes()).hexdigest()


def installed(python, name):
    res = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                         capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def test_a_venv_is_made_exactly_from_a_lock(tmp_path, six_wheel):
    lock = tmp_path / "lock.txt"
    lock.write_text(f"# the record's server environment\nsix==1.17.0 --hash=sha256:{six_wheel}\n")
    python = pyenv.create_venv(sys.executable, str(tmp_path / "venv"))
    assert pyenv.pip_install_locked(python, str(lock)) == ["six"]
    assert installed(python, "six") == "1.17.0"
    got = {d.name: d for d in envlock.read(python)}
    assert got["six"].sha256 == six_wheel                           # the venv's own lock carries it on


@pytest.mark.parametrize("line, said", [
    ("six==1.17.0 --hash=sha256:" + "0" * 64, r"six==1\.17\.0 \(the index serves a file whose sha256 is not the locked one\)"),
    ("six==0.0.999 --hash=sha256:" + "0" * 64, r"six==0\.0\.999 \(Could not find a version"),
])
def test_a_lock_that_cannot_be_had_as_recorded_is_refused_naming_each_package(tmp_path, six_wheel, line, said):
    lock = tmp_path / "lock.txt"
    lock.write_text(line + "\n")
    python = pyenv.create_venv(sys.executable, str(tmp_path / "venv"))
    with pytest.raises(pyenv.PyEnvError, match=r"cannot be installed as recorded: 1 package\(s\) of the lock could "
                                               r"not be had: " + said):
        pyenv.pip_install_locked(python, str(lock))
    assert installed(python, "six") == ""


def test_a_run_environment_of_exact_versions_and_a_source_archive_is_installed_as_pinned(tmp_path, six_wheel):
    """A run environment's lock (replay's runenv): hashed pins, exact versions without a hash (a venv
    installed by hand), and rouge-score, published only as a source archive, built by the pinned
    build tools with no index; nothing else comes along (no dependency resolved)."""
    lock = tmp_path / "run-lock.txt"
    lock.write_text(f"six==1.17.0 --hash=sha256:{six_wheel}\nrouge-score==0.1.2\n")
    python = pyenv.create_venv(sys.executable, str(tmp_path / "venv"))
    with pytest.raises(pyenv.PyEnvError, match=r"line 2: 'rouge-score==0\.1\.2' is not 'name==version --hash"):
        pyenv.pip_install_locked(python, str(lock))             # a server's lock: every line hashed
    names = pyenv.pip_install_locked(python, str(lock), bare_pins=True)
    assert sorted(envlock.dist_key(n) for n in names) == ["rouge-score", "six"]
    assert installed(python, "six") == "1.17.0" and installed(python, "rouge-score") == "0.1.2"
    assert installed(python, "nltk") == "" and installed(python, "wheel") == ""    # not resolved, no build tools left
    # the venv's lock names the source archive as the index serves it (not the wheel built here), so
    # a venv or an image made from that lock, every line by its hash, fetches the same archive
    sdist = tmp_path / "sdist"
    res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary=:all:",
                          "rouge-score==0.1.2", "-d", str(sdist)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    archive, = sdist.iterdir()
    locked = {envlock.dist_key(d.name): d for d in envlock.read(python)}
    assert locked["rouge-score"].sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    again = tmp_path / "again.txt"
    again.write_text(envlock.requirements([locked["rouge-score"], locked["six"]]))
    other = pyenv.create_venv(sys.executable, str(tmp_path / "venv-again"))
    assert sorted(envlock.dist_key(n) for n in pyenv.pip_install_locked(other, str(again))) == ["rouge-score", "six"]


def test_this_project_is_installed_from_its_files_into_a_venv_of_its_own(tmp_path):
    """pyenv.pip_install_project: the package cmind registers (cm4mlperf_llm with its cmr.yaml) and the
    .pth of its import hook, built with no index; a folder that is not the whole project is named."""
    python = pyenv.create_venv(sys.executable, str(tmp_path / "venv"))
    with pyenv.build_tools(python) as build:            # install-run-environment's one build venv
        pyenv.pip_install_project(python, build=build)
        assert os.path.isfile(build)
    assert not os.path.exists(build)
    files = [f for f in pyenv.PROJECT_FILES if os.path.splitext(f)[1]]      # setup.py, cmr.yaml, README.md
    res = subprocess.run([python, "-c", "import cm4mlperf_llm, os, sys, sysconfig; d = os.path.dirname(cm4mlperf_llm.__file__); "
                          "print(*(os.path.isfile(os.path.join(d, f)) for f in sys.argv[1:]), "
                          "os.path.isfile(os.path.join(sysconfig.get_paths()['purelib'], 'cm4mlperf_llm-cmind.pth')))",
                          *files], capture_output=True, text=True)
    assert len(files) == 3 and res.stdout.split() == ["True"] * 4, res.stderr    # whole: it can be installed again
    with pytest.raises(pyenv.PyEnvError, match=r"is not a whole copy of this project \(setup\.py, cmr\.yaml"):
        pyenv.pip_install_project(python, str(tmp_path))


def test_a_site_folder_keeps_its_lock_and_a_recorded_archive_is_installed_by_its_hash(tmp_path, six_wheel):
    """pyenv.pip_install_into (LoadGen's site folder of a round): the folder holds the lock of what it
    installed (the archive's sha256, which the run's record keeps); given that pin (a replay's), the
    same archive is installed by its hash, and another file behind the hash is refused, nothing left."""
    python = pyenv.create_venv(sys.executable, str(tmp_path / "venv"))
    req = pyenv.PackageRequest("six", "1.17.0")
    site = str(tmp_path / "site")
    assert pyenv.pip_install_into(python, req, site) == "1.17.0"
    assert envlock.site_lock(site)["six"].sha256 == six_wheel
    pinned = str(tmp_path / "pinned")
    assert pyenv.pip_install_into(python, req, pinned, locked=envlock.Locked("six", "1.17.0", six_wheel)) == "1.17.0"
    assert envlock.site_lock(pinned)["six"].sha256 == six_wheel
    wrong = str(tmp_path / "wrong")
    with pytest.raises(pyenv.PyEnvError, match=r"could not install six==1\.17\.0.*\n(.*\n)*.*HASHES"):
        pyenv.pip_install_into(python, req, wrong, locked=envlock.Locked("six", "1.17.0", "0" * 64))
    assert not os.path.exists(wrong) and not os.path.exists(wrong + ".tmp") and not os.path.exists(wrong + ".report.json")


def test_the_model_steps_venv_is_made_from_a_replays_lock_through_the_engine(tmp_path, six_wheel):
    """install-python-venv --lock (a replay gives it to the model steps' `ml` venv alone, as
    --adr.ml-venv.env.CM_VENV_LOCK): the venv holds exactly the lock, each archive by its hash, and is
    cached under that lock; a lock that cannot be had is refused naming the package, no entry left."""
    from cmengine.registry import Repo
    from enginefixtures import Runner
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    runner = Runner([Repo("cm4mlperf-llm", root)], str(tmp_path / "cache"), include_project=True)
    lock = tmp_path / "ml-lock-1.txt"
    lock.write_text(f"six==1.17.0 --hash=sha256:{six_wheel}\n")
    r = runner.run("install,python-venv,_name.locktest", lock=str(lock))
    assert r["return"] == 0, r.get("error")
    python = r["new_env"]["CM_VENV_PYTHON"]
    assert installed(python, "six") == "1.17.0"
    assert {d.name: d.sha256 for d in envlock.read(python)}["six"] == six_wheel
    again = runner.run("install,python-venv,_name.locktest", lock=str(lock))
    assert again["return"] == 0 and again["new_env"]["CM_VENV_PYTHON"] == python      # the same entry
    bad = tmp_path / "ml-lock-2.txt"
    bad.write_text("six==0.0.999 --hash=sha256:" + "0" * 64 + "\n")
    r = runner.run("install,python-venv,_name.locktest", lock=str(bad))
    assert r["return"] != 0 and "six==0.0.999 (Could not find a version" in r["error"], r.get("error")
    # a lock from elsewhere holding anything but exact pins is refused, naming the line (never handed to pip)
    hostile = tmp_path / "ml-lock-3.txt"
    hostile.write_text("six>=1 --index-url http://127.0.0.1:9/simple\n")
    r = runner.run("install,python-venv,_name.locktest", lock=str(hostile))
    assert r["return"] != 0 and f"{hostile}, line 1: 'six>=1 --index-url" in r["error"], r.get("error")
    store = tmp_path / "cache" / "store"
    assert len([e for e in store.iterdir() if e.name.startswith("install-python-venv-")]) == 1, \
        sorted(os.listdir(store))          # the failed installs left no entry beside the good one
