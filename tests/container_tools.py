"""Whether this host can build and run the project's images (the container tests' one skip reason):
podman, runc and mmdebstrap installed (.ci/run installs them from Debian as root), root (the tests
use rootful podman), and an apt mirror for the base."""
import os
import shutil

# the images a container test built for the e2e replay to find, listed in <cache>/containers/ (the
# replay's fixture removes them at the end)
MADE_IMAGES = "tests-made-images.txt"


def image_tags(eng) -> set:
    """Every repository:tag in the engine's store."""
    out = eng.run("images", "--format", "{{.Repository}}:{{.Tag}}", timeout=120).stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


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
