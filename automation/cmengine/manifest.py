"""Script manifests (`_cm.yaml` / `_cm.json`): loading, schema validation, typed values.

A manifest error names the file, the line, the key and the closest valid key. Loading one
manifest never affects another: the registry catches `ManifestError` per script.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple, Optional

import yaml

from .errors import ManifestError, did_you_mean

try:  # libyaml is several times faster; fall back to the pure-Python loader
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

SCRIPT_AUTOMATION_UID = "5b4e0237da074764"

DEP_LISTS = ("deps", "prehook_deps", "posthook_deps", "post_deps")

CONDITION_KEYS = ("enable_if_env", "skip_if_env", "enable_if_any_env", "skip_if_any_env")

TOP_KEYS = {
    "alias", "uid", "automation_alias", "automation_uid", "tags", "cache", "category", "name",
    "default_env", "env", "input_mapping", "input_description", "new_env_keys", "new_state_keys",
    "cache_key_env", "cache_key_files", "cache_recheck_env", "hook_env_keys", "default_version", "versions", "variations", "default_variations",
    "add_deps_recursive", "adr", "add_deps", "script_name", "developers", "private",
    "path_inputs",      # ours: inputs that name files or folders, resolved from the folder cm was started in
    *DEP_LISTS,
}
# Keys that cm4mlops/mlperf-automations manifests carry and that this engine knowingly ignores,
# so that a user's script repository written for those engines still loads.
TOLERATED_TOP_KEYS = {
    "docker", "tests", "print_env_at_the_end", "print_files_if_script_error", "clean_files",
    "sort", "tags_help", "deps_help", "warnings", "local_env_keys", "file", "clean_output_files",
    "can_force_cache", "env_key_mappings", "predeps", "script_details", "uid_", "repo_uid",
    "valid_variation_combinations", "invalid_variation_combinations", "state", "const", "const_state",
    "default_state", "ad", "versions_help", "docker_input_mapping", "input_description_ex",
    "hide_from_help", "update_meta_if_env", "use_any_action", "min_cm_version", "min_mlc_version",
    # cm4mlops: presentation only (its GUI and docs generator), no effect on a run
    "category_sort", "gui", "variation_groups_order", "print_env_at_the_end_disabled",
    "docker_off",
}
# cm4mlops keys that this engine implements beyond the ones above (docs/cm4mlops.md)
UPSTREAM_TOP_KEYS = {"extra_cache_tags_from_env"}
DEP_KEYS = {
    "tags", "names", "version", "version_min", "version_max", "version_max_usable", "env",
    "update_tags_from_env_with_prefix", "update_tags_from_env", "inherit_variation_tags",
    "skip_inherit_variation_groups", "force_env_keys", "tags_help", "continue_on_error",
    "force_cache", "dynamic", "reuse_version", "extra_cache_tags", "skip_if_fake_run", "adr",
    "add_deps_recursive", *CONDITION_KEYS,
}
VARIATION_KEYS = {
    "group", "default", "base", "env", "default_env", "default_variations", "add_deps_recursive",
    "adr", "add_deps", "ad", "new_env_keys", "new_state_keys", "default_version", "version",
    "alias", "cache_key_env", "input_mapping", "docker", "state", "const", "warnings",
    "script_name", "env_key_mappings", "tags", "private", "is_run_var", *DEP_LISTS,
}
# variation keys of cm4mlops manifests with no effect on what a script computes
TOLERATED_VARIATION_KEYS = {"required_disk_space", "docker_off"}


class Dep(NamedTuple):
    """One entry of deps/prehook_deps/posthook_deps/post_deps (an immutable value: a NamedTuple
    costs a tenth of a frozen dataclass to define, paid by every `cm` command at import)."""
    tags: tuple[str, ...]
    names: tuple[str, ...] = ()
    version: str = ""
    version_min: str = ""
    version_max: str = ""
    env: tuple[tuple[str, Any], ...] = ()
    conditions: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    update_tags_from_env_with_prefix: tuple[tuple[str, tuple[str, ...]], ...] = ()
    update_tags_from_env: tuple[str, ...] = ()
    inherit_variation_tags: bool = False
    skip_inherit_variation_groups: tuple[str, ...] = ()
    continue_on_error: bool = False
    extra_cache_tags: tuple[str, ...] = ()     # tags added to its cache entry (not to its key)
    skip_if_fake_run: bool = False
    inputs: tuple[tuple[str, Any], ...] = ()   # other keys: inputs of the script it names (CM)
    adr: tuple[tuple[str, Any], ...] = ()      # add_deps_recursive for that script's own deps


class Variation(NamedTuple):
    """One entry of `variations` (its settings are in `data`)."""
    name: str
    group: str
    default: bool
    base: list[str]
    data: dict

    @property
    def dynamic(self) -> bool:
        return self.name.endswith(".#")


class Manifest:
    """One script's validated `_cm.yaml`, with typed variations and dependencies."""

    def __init__(self, path: str, folder: str, alias: str, uid: str, tags: list[str],
                 cache: bool, data: dict, variations: dict[str, Variation],
                 deps: dict[str, list[Dep]]):
        self.path = path              # the _cm.yaml file
        self.folder = folder          # the script folder
        self.alias = alias
        self.uid = uid
        self.tags = tags
        self.cache = cache
        self.data = data              # the validated raw mapping
        self.variations = variations
        self.deps = deps              # per dependency list name
        self.repo = ""                # repository alias (filled by the registry)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    @property
    def groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for v in self.variations.values():
            if v.group:
                out.setdefault(v.group, []).append(v.name)
        return out


def load_manifest(folder: str) -> Manifest:
    """Load and validate the manifest of one script folder."""
    for name in ("_cm.yaml", "_cm.json"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            break
    else:
        raise ManifestError(folder, "no _cm.yaml or _cm.json in this script folder")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text) if path.endswith(".json") else yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ManifestError(path, f"not valid YAML: {getattr(e, 'problem', e)}",
                            line=(mark.line + 1) if mark else None,
                            names=_names_in_broken_yaml(text, folder)) from None
    except (OSError, ValueError) as e:
        raise ManifestError(path, f"cannot be read: {e}") from None
    if not isinstance(data, dict):
        raise ManifestError(path, "must be a mapping of keys to values", line=1)
    try:
        return _build(path, folder, data)
    except _SchemaProblem as p:
        line = _line_of(path, text, p.key_path) if not path.endswith(".json") else None
        raise ManifestError(path, p.message, line=line, key=".".join(map(str, p.key_path)),
                            hint=p.hint, names=_names(data, folder)) from None


def _names(data: dict, folder: str) -> tuple[str, ...]:
    """What a manifest that cannot be used would be asked for by: its folder, alias and tags."""
    tags = data.get("tags")
    tags = tags.split(",") if isinstance(tags, str) else tags if isinstance(tags, list) else []
    return tuple(dict.fromkeys([os.path.basename(folder), str(data.get("alias") or "")]
                               + [str(t).strip() for t in tags]))


def _names_in_broken_yaml(text: str, folder: str) -> tuple[str, ...]:
    """_names from the top-level `alias:` and `tags:` entries of a manifest whose YAML fails
    elsewhere (each entry, with its indented lines, read on its own)."""
    data: dict = {}
    for m in re.finditer(r"^(alias|tags):.*(?:\n[ \t]+\S.*)*", text, re.M):
        try:
            part = yaml.load(m.group(0), Loader=_Loader)
        except yaml.YAMLError:
            continue
        if isinstance(part, dict):
            data.update(part)
    return _names(data, folder)


_INPUT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class _SchemaProblem(Exception):
    def __init__(self, key_path: list, message: str, hint: str = ""):
        self.key_path, self.message, self.hint = key_path, message, hint


def _check_keys(mapping: dict, allowed: set, tolerated: set, where: list, what: str) -> None:
    for key in mapping:
        if key in allowed or key in tolerated:
            continue
        raise _SchemaProblem(where + [key], f"unknown {what} key '{key}'."
                             + did_you_mean(str(key), allowed),
                             f"Valid {what} keys: {', '.join(sorted(allowed))}")


def _as_list(value: Any, where: list, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v).strip() for v in value]
    raise _SchemaProblem(where, f"{what} must be a comma-separated string or a list of strings")


def _as_env(value: Any, where: list) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _SchemaProblem(where, "must be a mapping of ENV_NAME: value")
    out = {}
    for k, v in value.items():
        if isinstance(v, bool):
            v = "yes" if v else "no"
        elif isinstance(v, (int, float)):
            v = str(v)
        elif isinstance(v, list):
            if not str(k).startswith("+"):
                raise _SchemaProblem(where + [k], "a list value is only allowed for '+NAME' keys "
                                     "(path-like lists such as +PATH)")
            v = [str(x) for x in v]
        elif v is None:
            v = ""
        elif not isinstance(v, str):
            raise _SchemaProblem(where + [k], "env values must be strings, numbers or booleans")
        out[str(k)] = v
    return out


def _conditions(entry: dict, where: list) -> tuple:
    out = []
    for ck in CONDITION_KEYS:
        if ck not in entry:
            continue
        cond = entry[ck]
        if not isinstance(cond, dict):
            raise _SchemaProblem(where + [ck], f"{ck} must be a mapping of ENV_NAME: [values]")
        items = []
        for k, vals in cond.items():
            if not isinstance(vals, list):
                vals = [vals]
            norm = tuple(("yes" if v else "no") if isinstance(v, bool) else str(v) for v in vals)
            items.append((str(k), norm))
        out.append((ck, tuple(items)))
    return tuple(out)


def parse_dep(entry: Any, where: list) -> Dep:
    if not isinstance(entry, dict):
        raise _SchemaProblem(where, "a dependency must be a mapping with at least 'tags'")
    inputs = []
    for key, value in entry.items():   # as in CM, other scalar keys are inputs of that script
        if key in DEP_KEYS:
            continue
        if not isinstance(value, (str, int, float, bool)) or not _INPUT_NAME.match(str(key)):
            _check_keys({key: value}, DEP_KEYS, set(), where, "dependency")
        inputs.append((str(key), value))
    adr = entry.get("adr") or entry.get("add_deps_recursive") or {}
    if not isinstance(adr, dict):
        raise _SchemaProblem(where + ["adr"], "must be a mapping of dependency name: {tags: ...}")
    tags = _as_list(entry.get("tags"), where + ["tags"], "tags")
    if not tags:
        raise _SchemaProblem(where, "a dependency needs 'tags'")
    upd = entry.get("update_tags_from_env_with_prefix") or {}
    if not isinstance(upd, dict):
        raise _SchemaProblem(where + ["update_tags_from_env_with_prefix"],
                             "must be a mapping of tag prefix: [ENV_NAME, ...]")
    return Dep(
        tags=tuple(tags),
        names=tuple(_as_list(entry.get("names"), where + ["names"], "names")),
        version=str(entry.get("version", "") or ""),
        version_min=str(entry.get("version_min", "") or ""),
        version_max=str(entry.get("version_max", "") or entry.get("version_max_usable", "") or ""),
        env=tuple(sorted(_as_env(entry.get("env"), where + ["env"]).items(), key=lambda kv: kv[0])),
        conditions=_conditions(entry, where),
        update_tags_from_env_with_prefix=tuple((p, tuple(_as_list(v, where, "env names")))
                                               for p, v in upd.items()),
        update_tags_from_env=tuple(_as_list(entry.get("update_tags_from_env"), where, "env names")),
        inherit_variation_tags=bool(entry.get("inherit_variation_tags", False)),
        skip_inherit_variation_groups=tuple(_as_list(entry.get("skip_inherit_variation_groups"),
                                                     where, "groups")),
        continue_on_error=bool(entry.get("continue_on_error", False)),
        extra_cache_tags=tuple(_as_list(entry.get("extra_cache_tags"), where + ["extra_cache_tags"],
                                        "extra_cache_tags")),
        skip_if_fake_run=bool(entry.get("skip_if_fake_run", False)),
        inputs=tuple(sorted(inputs)),
        adr=tuple(sorted((str(k), v) for k, v in adr.items())),
    )


def parse_dep_lists(mapping: dict, where: list) -> dict[str, list[Dep]]:
    out = {}
    for lst in DEP_LISTS:
        raw = mapping.get(lst) or []
        if not isinstance(raw, list):
            raise _SchemaProblem(where + [lst], f"{lst} must be a list of dependencies")
        out[lst] = [parse_dep(d, where + [lst, i]) for i, d in enumerate(raw)]
    return out


def _build(path: str, folder: str, data: dict) -> Manifest:
    _check_keys(data, TOP_KEYS | UPSTREAM_TOP_KEYS, TOLERATED_TOP_KEYS, [], "manifest")
    ectf = data.get("extra_cache_tags_from_env") or []
    if not isinstance(ectf, list) or not all(isinstance(x, dict) for x in ectf):
        raise _SchemaProblem(["extra_cache_tags_from_env"],
                             "must be a list of {env_keys: [...], prefix: ...}")
    alias = str(data.get("alias") or os.path.basename(folder))
    tags = _as_list(data.get("tags"), ["tags"], "tags")
    for t in tags:
        if t.startswith("_") or t.startswith("-"):
            raise _SchemaProblem(["tags"], f"tag '{t}' may not start with '_' or '-' "
                                 "(those select variations or exclude tags)")
    for key in ("default_env", "env"):
        data[key] = _as_env(data.get(key), [key])
    im = data.get("input_mapping") or {}
    if not isinstance(im, dict):
        raise _SchemaProblem(["input_mapping"], "must be a mapping of input_name: ENV_NAME")
    data["input_mapping"] = {str(k): str(v) for k, v in im.items()}
    data["path_inputs"] = _as_list(data.get("path_inputs"), ["path_inputs"], "path_inputs")
    for name in data["path_inputs"]:
        if name not in data["input_mapping"]:
            raise _SchemaProblem(["path_inputs"], f"'{name}' is not an input of this script (input_mapping)")
    for key in ("new_env_keys", "new_state_keys", "cache_key_env", "cache_key_files",
                "cache_recheck_env", "hook_env_keys"):
        data[key] = _as_list(data.get(key), [key], key)
    deps = parse_dep_lists(data, [])
    variations = {}
    raw_vars = data.get("variations") or {}
    if not isinstance(raw_vars, dict):
        raise _SchemaProblem(["variations"], "must be a mapping of variation name: settings")
    for name, vdata in raw_vars.items():
        vdata = vdata or {}
        where = ["variations", name]
        if not isinstance(vdata, dict):
            raise _SchemaProblem(where, "a variation must be a mapping (or empty)")
        _check_keys(vdata, VARIATION_KEYS, TOLERATED_VARIATION_KEYS, where, "variation")
        vdata = dict(vdata)
        for key in ("env", "default_env"):
            vdata[key] = _as_env(vdata.get(key), where + [key])
        vdata["_deps"] = parse_dep_lists(vdata, where)
        base = _as_list(vdata.get("base"), where + ["base"], "base")
        variations[str(name)] = Variation(name=str(name), group=str(vdata.get("group", "") or ""),
                                          default=bool(vdata.get("default", False)), base=base,
                                          data=vdata)
    for name, v in variations.items():
        v.base[:] = [b[1:] if b.startswith("_") else b for b in v.base]   # cm4mlops writes _x too
        for b in v.base:
            if b not in variations and f"{b.partition('.')[0]}.#" not in variations:
                raise _SchemaProblem(["variations", name, "base"],
                                     f"base variation '{b}' is not defined."
                                     + did_you_mean(b, variations))
    versions = data.get("versions") or {}
    if not isinstance(versions, dict):
        raise _SchemaProblem(["versions"], "must be a mapping of version: settings")
    for ver, vdata in versions.items():
        vdata = dict(vdata or {})
        vdata["env"] = _as_env(vdata.get("env"), ["versions", ver, "env"])
        vdata["_deps"] = parse_dep_lists(vdata, ["versions", ver])
        versions[ver] = vdata
    data["versions"] = {str(k): v for k, v in versions.items()}
    return Manifest(path=path, folder=folder, alias=alias, uid=str(data.get("uid", "")),
                    tags=tags, cache=bool(data.get("cache", False)), data=data,
                    variations=variations, deps=deps)


def _line_of(path: str, text: str, key_path: list) -> Optional[int]:
    """The 1-based line of the deepest node of key_path that exists in the YAML text."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in key_path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line
