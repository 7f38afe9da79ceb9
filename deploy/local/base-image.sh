#!/usr/bin/env bash
# A Debian 12 image with Python 3.11 made from Debian's packages, for machines that reach
# no image registry (the images' BASE_IMAGE build argument takes it in place of the
# official python image):
#
#   deploy/local/base-image.sh [NAME]        # default localhost/jobnik-debian-python:bookworm
#
# Needs debootstrap and podman, as root. Takes about a minute; does nothing if NAME exists.
set -euo pipefail
NAME=${1:-localhost/jobnik-debian-python:bookworm}
if podman image exists "$NAME"; then
  echo "$NAME exists"
  exit 0
fi
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobnik-rootfs.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  bookworm "$ROOT" http://deb.debian.org/debian >"$ROOT.log" 2>&1 \
  || { tail -20 "$ROOT.log" >&2; exit 1; }
rm -f "$ROOT.log"
# What an image does not need at run time: downloaded packages, package lists, docs.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* \
  "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/locale/*
# As the official images do: apt keeps no package lists or downloads in a layer.
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
  >"$ROOT/etc/apt/apt.conf.d/90jobnik-minimal"
tar -C "$ROOT" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' - "$NAME" >/dev/null 2>&1
echo "$NAME built"
