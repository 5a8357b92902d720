"""Whether this host can build and run the project's images (the container tests' one skip reason):
podman, runc and mmdebstrap installed (.ci/run installs them from Debian as root), root (the tests
use rootful podman), and an apt mirror for the base."""
import os
import shutil


def why_not() -> str:
    """'' where images can be built and run here; else why not, in words."""
    from mlperf_llm.containers import base
    missing = [t for t in ("podman", "mmdebstrap", "runc") if not shutil.which(t)]
    if missing:
        return f"{', '.join(missing)} not installed (.ci/run installs them from Debian as root)"
    if os.geteuid() != 0:
        return "the image tests use rootful podman; run them as root (CI does)"
    try:
        base.host_mirror()
    except base.BaseError as e:
        return str(e)
    return ""
