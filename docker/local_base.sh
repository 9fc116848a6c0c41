#!/usr/bin/env bash
# A local stand-in for docker/Dockerfile's CUDA base, for machines that reach an Ubuntu apt mirror but no image
# registry: a minimal Ubuntu 24.04 (noble) rootfs made with debootstrap and imported into podman. Like the official
# ubuntu:24.04 image (which the CUDA base is built on) it has apt sources for main/restricted/universe/multiverse and
# a user 'ubuntu' with uid 1000, and no python3: the Dockerfile installs python3 (3.12 on noble) itself.
# It has no CUDA libraries, which the image does not need (the torch wheels bring their own; the host its driver).
#
#   sudo docker/local_base.sh                      # -> localhost/redline-base:noble
#   podman build --build-arg BASE_IMAGE=localhost/redline-base:noble -f docker/Dockerfile -t redline:local .
#
# Needs root, debootstrap and podman (Debian: apt-get install debootstrap podman). Debian has no Ubuntu keyring
# package, so the script fetches Ubuntu's and trusts only the 2018 archive signing key, checked by its fingerprint.
# If the host reaches the Internet through a TLS-intercepting proxy, EXTRA_CA_DIR's *.crt files (default
# /usr/local/share/ca-certificates, the host's own additions) are copied into the base: the Dockerfile's
# `apt-get install ca-certificates` then adds them to the image's CA bundle, which uv and pip read via SSL_CERT_FILE.
set -euo pipefail

MIRROR=${MIRROR:-http://archive.ubuntu.com/ubuntu}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://security.ubuntu.com/ubuntu}
SUITE=noble
TAG=${TAG:-localhost/redline-base:noble}
WORK=${WORK:-/var/tmp/redline-base}
EXTRA_CA_DIR=${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}
# Ubuntu Archive Automatic Signing Key (2018) <ftpmaster@ubuntu.com>, which signs noble's Release files
ARCHIVE_KEY=F6ECB3762474EDA9D21B7022871920D1991BC93C
KEYRING_DEB=pool/main/u/ubuntu-keyring/ubuntu-keyring_2023.11.28.1_all.deb
KEYRING_SHA256=36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8

ROOTFS=$WORK/rootfs
rm -rf "$ROOTFS" "$WORK/keyring"
mkdir -p "$WORK/keyring"

# 1. the archive key: Ubuntu's keyring package, then only the key with the known fingerprint
curl -fsS -o "$WORK/keyring/ubuntu-keyring.deb" "$MIRROR/$KEYRING_DEB"
echo "$KEYRING_SHA256  $WORK/keyring/ubuntu-keyring.deb" | sha256sum -c -
dpkg-deb -x "$WORK/keyring/ubuntu-keyring.deb" "$WORK/keyring/x"
export GNUPGHOME=$WORK/keyring/gnupg
mkdir -p -m 700 "$GNUPGHOME"
gpg --batch --quiet --no-default-keyring --keyring "$WORK/keyring/x/usr/share/keyrings/ubuntu-archive-keyring.gpg" \
    --export "$ARCHIVE_KEY" >"$WORK/keyring/archive.gpg"
gpg --batch --no-default-keyring --keyring "$WORK/keyring/archive.gpg" --with-colons --fingerprint \
    | grep -q "^fpr:::::::::$ARCHIVE_KEY:" || { echo "archive key $ARCHIVE_KEY not found" >&2; exit 1; }

# 2. the rootfs (Debian 12's debootstrap has no 'noble' script; noble uses the same one as every Ubuntu since gutsy)
debootstrap --variant=minbase --arch=amd64 --components=main,universe --keyring="$WORK/keyring/archive.gpg" \
    "$SUITE" "$ROOTFS" "$MIRROR" /usr/share/debootstrap/scripts/gutsy

# 3. make it look like ubuntu:24.04: its apt sources, its uid-1000 user, no caches
rm -f "$ROOTFS/etc/apt/sources.list"
cp "$WORK/keyring/archive.gpg" "$ROOTFS/usr/share/keyrings/redline-ubuntu-archive.gpg"
cat >"$ROOTFS/etc/apt/sources.list.d/ubuntu.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates $SUITE-backports
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/redline-ubuntu-archive.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/redline-ubuntu-archive.gpg
EOF
chroot "$ROOTFS" useradd --create-home --uid 1000 --shell /bin/bash ubuntu
if compgen -G "$EXTRA_CA_DIR/*.crt" >/dev/null; then
    mkdir -p "$ROOTFS/usr/local/share/ca-certificates"
    cp "$EXTRA_CA_DIR"/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
fi
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/log/*.log "$ROOTFS"/tmp/*

# 4. into podman
tar --numeric-owner --xattrs -C "$ROOTFS" -c . | podman import \
    --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    - "$TAG"
rm -rf "$ROOTFS"
podman image ls "$TAG"
