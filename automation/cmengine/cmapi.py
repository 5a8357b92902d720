"""What a CM hook written for cm4mlops (upstream's `customize.py`) may touch, in one place.

Upstream hooks read `i['os_info']`, `i['recursion_spaces']`, `i['run_script_input']` and call
methods of `i['automation']` (upstream's script automation object). This module gives them the
same inputs and a small facade with the methods upstream hooks use (surveyed over the 267
`customize.py` of mlcommons/cm4mlops: `find_artifact`, `parse_version`, `run_native_script`,
`detect_version_using_script`, `get_default_path_list`, `cmind`, ...), implemented on this
engine. The executor calls this module; this module never imports the executor: it receives a
`native(script_file, env, state)` callable that runs one native script the engine's way.

A method upstream has and this facade does not is an `AttributeError` naming the method (never
a silent no-op); `update_deps` (changing the planned graph from inside a hook) is refused with a
named error, since the graph is fixed before anything runs.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Optional

_OS_INFO: dict = {}


def os_info() -> dict:
    """Upstream's `os_info` (from its `utils` automation's get_host_os_info), computed once."""
    if _OS_INFO:
        return _OS_INFO
    pbits = "64" if sys.maxsize > 2 ** 32 else "32"
    if sys.platform.startswith("win"):  # pragma: no cover - this engine runs .sh scripts only
        info = {"platform": "windows", "bat_ext": ".bat", "set_env": "set ${key}=${value}",
                "env_separator": ";", "env_var": "%env_var%", "bat_rem": "rem ${rem}",
                "run_local_bat": "call ${bat_file}", "run_local_bat_from_python": "call ${bat_file}",
                "run_bat": "call ${bat_file}", "start_script": ["@echo off", ""],
                "env": {"CM_WINDOWS": "yes"}}
    else:
        info = {"platform": "darwin" if sys.platform == "darwin" else "linux", "bat_ext": ".sh",
                "set_env": 'export ${key}="${value}"', "env_separator": ":",
                "env_var": "${env_var}", "set_exec_file": 'chmod 755 "${file_name}"',
                "bat_rem": "# ${rem}", "run_local_bat": ". ./${bat_file}",
                "run_local_bat_from_python": 'bash -c ". ./${bat_file}"',
                "run_bat": ". ${bat_file}", "start_script": ["#!/bin/bash", ""], "env": {}}
    machine = os.uname().machine if hasattr(os, "uname") else ""
    info["bits"] = "64" if machine.endswith("64") or machine in ("s390x",) else pbits
    info["python_bits"] = pbits
    _OS_INFO.update(info)
    return _OS_INFO


def script_file(env: dict, folder: str, name: str = "run") -> str:
    """The native script upstream would run: `run-<os flavor>[-<version>][-<platform>].sh` when
    the folder has one for this host, else `<name>.sh`."""
    f1, f2 = env.get("CM_HOST_OS_FLAVOR", ""), env.get("CM_HOST_OS_VERSION", "")
    f3 = env.get("CM_HOST_PLATFORM_FLAVOR", "")
    for parts in ((f1, f2, f3), (f1, f3), (f1, f2), (f1,), (f3,)):
        if all(parts):
            candidate = "-".join((name,) + parts) + ".sh"
            if os.path.isfile(os.path.join(folder, candidate)):
                return candidate
    return name + ".sh"


def hook_input(base: dict, facade: "Facade", module: Any, node_tags: list[str]) -> dict:
    """Add to the engine's hook input what upstream hooks read (the engine's keys stay)."""
    info = os_info()
    common = {"input": base.get("input", {}), "automation": facade, "artifact": facade.artifact,
              "customize": {}, "os_info": info, "recursion_spaces": "  ",
              "script_tags": node_tags, "variation_tags": base.get("variation_tags", [])}
    rsi = {"path": base["script_path"], "bat_ext": info["bat_ext"], "os_info": info,
           "env": base["env"], "state": base["state"], "meta": base["meta"],
           "recursion_spaces": "  ", "customize_code": module, "customize_common_input": common,
           "script_name": ""}
    out = dict(base)
    out.update(common)
    out["input"] = base.get("input", {})
    out["run_script_input"] = rsi
    return out


class _Artifact:
    """Upstream passes the script's CM artifact; hooks read `.path` and `.meta`."""

    def __init__(self, path: str, meta: dict):
        self.path = path
        self.meta = meta
        self.repo_meta: dict = {}


class _CmindProxy:
    """`automation.cmind`: cmind itself (download_file, unzip_file, cache find, ...), created on
    first use so that a hook that never calls it costs nothing."""

    def _real(self):
        import cmind.core
        if cmind.core.cm is None:
            cmind.core.cm = cmind.core.CM()
        return cmind.core.cm

    def access(self, i: dict) -> dict:
        return self._real().access(i)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "utils":
            import cmind.utils
            return cmind.utils
        return getattr(self._real(), name)


class Facade:
    """`i['automation']` for hooks: upstream's methods that hooks call, on this engine."""

    action_object = "script"
    tmp_file_ver = "tmp-ver.out"

    def __init__(self, script_path: str, meta: dict,
                 native: Callable[[str, dict, dict], None], automation_path: str = ""):
        self.path = automation_path          # the script automation's folder, as upstream's
        self.meta = {"alias": "script", "uid": "5b4e0237da074764"}
        self.artifact = _Artifact(script_path, meta)
        self.script_meta = meta
        self.cmind = _CmindProxy()
        self._native = native

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"automation.{name}() of cm4mlops' script automation is not provided by the "
            "cm4mlperf-llm engine (see docs/cm4mlops.md for the methods it provides)")

    # -- native scripts -----------------------------------------------------------------------
    def run_native_script(self, i: dict) -> dict:
        """Run `<script_name>.sh` of the script folder with `env`; its tmp-run-env.out updates
        `env` (as upstream, the caller's env is the one updated)."""
        rsi = i["run_script_input"]
        env = i.get("env") if i.get("env") is not None else rsi.get("env", {})
        state = rsi.get("state", {})
        r = self._run(rsi["path"], i["script_name"], env, state)
        if r["return"] > 0:
            return r
        if i.get("detect_version"):
            return self._detect_version(rsi, env, state)
        return dict(r, env_tmp=dict(env))

    def _run(self, folder: str, name: str, env: dict, state: dict) -> dict:
        from .errors import EngineError
        path = os.path.join(folder, script_file(env, folder, name or "run"))
        if not os.path.isfile(path):
            return {"return": 0}
        try:
            self._native(path, env, state)
        except EngineError as e:
            return {"return": 2, "error": str(e)}
        return {"return": 0}

    def _detect_version(self, rsi: dict, env: dict, state: dict) -> dict:
        code = rsi.get("customize_code")
        if code is None or not hasattr(code, "detect_version"):
            return {"return": 0}
        ii = dict(rsi.get("customize_common_input") or {})
        ii.update(env=env, state=state, meta=rsi.get("meta", self.script_meta))
        return code.detect_version(ii) or {"return": 0}

    def detect_version_using_script(self, i: dict) -> dict:
        rsi = i["run_script_input"]
        env = i.get("env", {})
        r = self._run(rsi["path"], rsi.get("script_name") or "run", env, rsi.get("state", {}))
        if r["return"] == 0:
            r = self._detect_version(rsi, env, rsi.get("state", {}))
        if r["return"] == 0 and r.get("version"):
            if _allowed(str(r["version"]), env):
                return {"return": 0, "detected_version": r["version"]}
        return {"return": 16, "error": "version was not detected"}

    def parse_version(self, i: dict) -> dict:
        name = i.get("file_name") or self.tmp_file_ver
        try:
            with open(name, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return {"return": 16, "error": f"version was not detected ({name} does not exist)"}
        m = None
        for line in text.splitlines():
            m = re.search(i["match_text"], line)
            if m:
                break
        if m is None:
            return {"return": 1, "error": f"version was not detected ({text.strip()[:200]})",
                    "string": text}
        group = int(i["group_number"])
        if not m.lastindex or m.lastindex < group:
            return {"return": 1, "error": "Invalid version detection group number "
                    f"{group} (the match has {m.lastindex or 0} groups)"}
        version = m.group(group)
        i["which_env"][i["env_key"]] = version
        i["which_env"]["CM_DETECTED_VERSION"] = version
        return {"return": 0, "version": version, "string": text}

    # -- finding files ------------------------------------------------------------------------
    def get_default_path_list(self, i: dict) -> list[str]:
        key = i.get("default_path_env_key", "")
        sep = (i.get("os_info") or os_info())["env_separator"]
        return os.environ.get(key, "").split(sep) if key else []

    def find_artifact(self, i: dict) -> dict:
        """Find `file_name` in `CM_TMP_PATH` (or the default path list of
        `default_path_env_key`), optionally keeping only files whose detected version meets
        CM_VERSION*; set `env[env_path_key]` and add the folder to `+<default_path_env_key>`."""
        env = i["env"]
        sep = (i.get("os_info") or os_info())["env_separator"]
        file_name = i["file_name"]
        path = env.get("CM_TMP_PATH", "")
        if path and env.get("CM_TMP_PATH_IGNORE_NON_EXISTANT", "") != "yes":
            for p in path.split(sep):
                if p.strip() and not os.path.isdir(p):
                    return {"return": 1, "error": f"path {p} doesn't exist"}
        forced = env.get("CM_INPUT", "").strip()
        if forced:
            if not os.path.isfile(forced):
                return {"return": 1, "error": f"file {forced} doesn't exist"}
            file_name, path = os.path.basename(forced), os.path.dirname(forced)
        default = self.get_default_path_list(i)
        paths = path.split(sep) if path else default
        found = self.find_file_in_paths({"paths": list(dict.fromkeys(paths)),
                                         "file_name": file_name, "hook": i.get("hook")})["found_files"]
        if i.get("detect_version"):
            found = self._with_good_version(found, i)
            if isinstance(found, dict):
                return found
        if not found:
            return {"return": 16, "error": f"{file_name} not found"}
        file_path = found[0]
        found_path = os.path.dirname(file_path)
        if found_path not in default:
            key = "+" + i.get("default_path_env_key", "")
            lst = env.setdefault(key, [])
            if found_path not in lst:
                lst.insert(0, found_path)
            for extra, env_key in (i.get("extra_paths") or {}).items():
                epath = os.path.normpath(os.path.join(found_path, "..", extra))
                if os.path.exists(epath):
                    env.setdefault(env_key, []).append(epath)
        if i.get("env_path_key"):
            env[i["env_path_key"]] = file_path
        return {"return": 0, "found_path": found_path, "found_file_path": file_path,
                "found_file_name": os.path.basename(file_path), "default_path_list": default}

    def _with_good_version(self, files: list[str], i: dict):
        rsi = i["run_script_input"]
        good = []
        for f in files:
            env = dict(i["env"])
            env[i["env_path_key"]] = f
            r = self._run(rsi["path"], rsi.get("script_name") or "run", env, rsi.get("state", {}))
            if r["return"] == 0:
                r = self._detect_version(rsi, env, rsi.get("state", {}))
            if r["return"] > 0:
                if r["return"] != 2:
                    return r
                continue
            version = r.get("version", "")
            if version and version != -1 and _allowed(str(version), i["env"]):
                good.append(f)
        return good

    def find_file_in_paths(self, i: dict) -> dict:
        import glob
        name = i.get("file_name_re") or i.get("file_name", "")
        is_re = bool(i.get("file_name_re"))
        hook = i.get("hook")
        found: list[str] = []
        suffixes = ("", ".[0-9]", ".[0-9][0-9]", "-[0-9]", "-[0-9][0-9]", "[0-9]", "[0-9][0-9]",
                    "[0-9].[0-9]", "[0-9][0-9].[0-9]", "[0-9][0-9].[0-9][0-9]")
        for path in i.get("paths", []):
            if not os.path.isdir(path):
                continue
            if is_re:
                candidates = [os.path.join(path, f) for f in sorted(os.listdir(path))
                              if re.match(name, f)]
            else:
                candidates = [f for s in suffixes for f in glob.glob(os.path.join(path, name) + s)]
            for f in candidates:
                if any(_same(f, g) for g in found):
                    continue
                if hook is not None:
                    r = hook({"file": f})
                    if r["return"] > 0:
                        return r
                    if r.get("skip"):
                        continue
                found.append(f)
        return {"return": 0, "found_files": found}

    def find_file_deep(self, i: dict) -> dict:
        paths, name = i["paths"], i["file_name"]
        found = []
        for p in paths:
            for root, _, files in os.walk(p):
                if name in files:
                    found.append(root)
        return {"return": 0, "found_paths": found}

    def find_file_back(self, i: dict) -> dict:
        path, name = i.get("path") or os.getcwd(), i["file_name"]
        while True:
            if os.path.isfile(os.path.join(path, name)):
                return {"return": 0, "found_path": path}
            parent = os.path.dirname(path)
            if parent == path:
                return {"return": 0, "found_path": ""}
            path = parent

    # -- the rest -----------------------------------------------------------------------------
    def clean_some_tmp_files(self, i: dict) -> dict:
        work = (i.get("env") or {}).get("CM_TMP_CURRENT_SCRIPT_WORK_PATH", "")
        for name in ("tmp-run.bat", "tmp-state.json"):
            p = os.path.join(work, name)
            if work and os.path.isfile(p):
                os.remove(p)
        return {"return": 0}

    def _available_variations(self, i: dict) -> dict:
        meta = i["meta"]
        names = sorted("_" + v for v in meta.get("variations", {}))
        return {"return": 1, "error": f"python package variation is not defined in "
                f"\"{meta.get('alias', '')}\". Available: {' '.join(names)}"}

    def update_deps(self, i: dict) -> dict:
        return {"return": 1, "error": "automation.update_deps() changes dependencies from inside a "
                "hook; the cm4mlperf-llm engine plans the whole graph before anything runs, so a "
                "hook cannot change it. Set the dependency's tags with a variation, --adr or env "
                "instead (or run this script with cm4mlops' engine: cm run mlcommons@cm4mlops:script)."}


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _allowed(version: str, env: dict) -> bool:
    from .versions import Constraint
    c = Constraint(env.get("CM_VERSION", ""), env.get("CM_VERSION_MIN", ""),
                   env.get("CM_VERSION_MAX", ""))
    return c.allows(version)


def select_state(state: dict, patterns: list[str], env: Optional[dict] = None) -> dict:
    """`new_state_keys`: names, wildcards (`*`, `?`) and `<<<VAR>>>` (the key is VAR's value)."""
    return _select(state, patterns, state if env is None else env)


def _select(values: dict, patterns: list[str], refs: dict) -> dict:
    import fnmatch
    out = {}
    for p in patterns:
        if "*" in p or "?" in p:
            out.update({k: v for k, v in values.items() if fnmatch.fnmatchcase(k, p)})
        elif p in values:
            out[p] = values[p]
        elif "<<<" in p:
            for ref in re.findall(r"<<<(.*?)>>>", p):
                name = refs.get(ref)
                if isinstance(name, str) and name in values:
                    out[name] = values[name]
    return out
