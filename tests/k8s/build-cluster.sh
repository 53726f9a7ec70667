#!/usr/bin/env bash
# Build the Kubernetes 1.20 control plane and kubelet binaries for the test bed from Debian
# bookworm's `kubernetes` source package (its orig tarball ships vendor/, so the build runs
# offline with Debian's Go). The binaries are cached outside the checkout, in
# $AIBENCH_K8S_CACHE (default /var/cache/aibench-k8s); a second run finds them and exits at once.
# Needs root (apt) and the packages golang-go rsync dpkg-dev (see the Makefile's APT_PACKAGES).
set -euo pipefail
CACHE="${AIBENCH_K8S_CACHE:-/var/cache/aibench-k8s}"
VERSION=v1.20.2
BINS="kube-apiserver kubelet kube-controller-manager kube-scheduler"
BIN="$CACHE/bin"

have_all() {
  for b in $BINS; do [ -x "$BIN/$b" ] || return 1; done
  "$BIN/kubelet" --version 2>/dev/null | grep -q "$VERSION"
}

if have_all; then
  echo "kubernetes $VERSION binaries cached in $BIN"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.build.lock"
flock 9
if have_all; then echo "kubernetes $VERSION binaries cached in $BIN"; exit 0; fi

SRC="$CACHE/src"
mkdir -p "$SRC/lists/partial" "$SRC/archives"
# A private deb-src list that mirrors the machine's own bookworm sources; the system's
# package lists are left as they are.
cat > "$SRC/sources.list" <<LIST
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
LIST
APT_OPTS=(-o "Dir::Etc::SourceList=$SRC/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$SRC/lists" -o "Dir::Cache::Archives=$SRC/archives")
start=$(date +%s)
orig=$(ls "$SRC"/kubernetes_*.orig.tar.gz 2>/dev/null | head -n1 || true)
if [ -z "$orig" ]; then
  apt-get "${APT_OPTS[@]}" update -q
  (cd "$SRC" && apt-get "${APT_OPTS[@]}" source --download-only kubernetes)
  orig=$(ls "$SRC"/kubernetes_*.orig.tar.gz | head -n1)
fi
WORK="$CACHE/work"
rm -rf "$WORK"
mkdir -p "$WORK"
tar -xzf "$orig" -C "$WORK" --strip-components=1
cd "$WORK"
# Go's build cache stays with the other cached files so that a rebuild reuses it.
export GOCACHE="$CACHE/gocache" GOPATH="$CACHE/gopath" HOME="${HOME:-/root}"
export GOFLAGS=-mod=vendor GOPROXY=off CGO_ENABLED=0 KUBE_GIT_VERSION=$VERSION
make WHAT="cmd/kube-apiserver cmd/kubelet cmd/kube-controller-manager cmd/kube-scheduler"
mkdir -p "$BIN.new"
for b in $BINS; do install -m 0755 "_output/local/bin/linux/$(go env GOARCH)/$b" "$BIN.new/$b"; done
rm -rf "$BIN"
mv "$BIN.new" "$BIN"
cd /
rm -rf "$WORK"
end=$(date +%s)
echo "built kubernetes $VERSION in $((end - start)) s into $BIN"
echo "$((end - start))" > "$CACHE/build-seconds"
