"""Pinned container images for a run: the base rootfs from the apt snapshot (base.py), the image's
recipe from the run's locks (recipe.py), building and checking it with podman or docker (engine.py,
image.py), and the unprivileged SquashFS route for clusters (squash.py)."""
