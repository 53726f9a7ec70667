#!/usr/bin/env bash
# Build the Kubernetes 1.20 control plane and kubelet binaries for the test bed from Debian
# bookworm's `kubernetes` source package (its orig tarball ships vendor/, so the build runs
# offline with Debian's Go). The binaries are cached outside the checkout, in
# $AIBENCH_K8S_CACHE (default /var/cache/aibench-k8s); a second run finds them and exits at once.
# Needs root (apt) and the packages golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev
# (see the Makefile's TEST_PACKAGES).
#
# One dependency is replaced before the build: the tarball vendors
# github.com/modern-go/reflect2 v1.0.1, which crashes under Go >= 1.18 (a SIGSEGV in
# UnsafeMapType.UnsafeIterate as soon as kube-apiserver encodes a custom object); v1.0.2 fixes
# it and is what Debian packages, so its source takes the vendored copy's place. The binaries
# carry a marker of that patch ($BIN/PATCHES): a cache built without it is rebuilt once.
set -euo pipefail
CACHE="${AIBENCH_K8S_CACHE:-/var/cache/aibench-k8s}"
VERSION=v1.20.2
BINS="kube-apiserver kubelet kube-controller-manager kube-scheduler"
BIN="$CACHE/bin"
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
PATCHES="github.com/modern-go/reflect2 v1.0.2"

have_all() {
  for b in $BINS; do [ -x "$BIN/$b" ] || return 1; done
  grep -qxF "$PATCHES" "$BIN/PATCHES" 2>/dev/null || return 1
  "$BIN/kubelet" --version 2>/dev/null | grep -q "$VERSION"
}

# Put reflect2 v1.0.2 in place of the vendored v1.0.1 and say so in go.mod (the replace line),
# staging apimachinery's go.mod (the require line) and vendor/modules.txt (the module's header
# and replacement lines), so that -mod=vendor finds them in agreement.
patch_reflect2() {
  [ -f "$REFLECT2_SRC/go_above_118.go" ] || {
    echo "build-cluster.sh: $REFLECT2_SRC missing: install golang-github-modern-go-reflect2-dev" >&2
    exit 1
  }
  rm -rf vendor/github.com/modern-go/reflect2
  cp -r "$REFLECT2_SRC" vendor/github.com/modern-go/reflect2
  sed -i 's#^\(\s*github.com/modern-go/reflect2 => github.com/modern-go/reflect2\) v1.0.1$#\1 v1.0.2#' go.mod
  sed -i 's#^\(\s*github.com/modern-go/reflect2\) v1.0.1$#\1 v1.0.2#' \
    staging/src/k8s.io/apimachinery/go.mod
  # "# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2 v1.0.1" and
  # "# github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.1"
  sed -i -e '/^# github.com\/modern-go\/reflect2 /s/ v1\.0\.1/ v1.0.2/g' vendor/modules.txt
  if grep -rn 'modern-go/reflect2.*v1\.0\.1' go.mod vendor/modules.txt staging/src/k8s.io/apimachinery/go.mod; then
    echo "build-cluster.sh: reflect2 v1.0.1 still named after the patch" >&2
    exit 1
  fi
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
patch_reflect2
# Go's build cache stays with the other cached files so that a rebuild reuses it.
export GOCACHE="$CACHE/gocache" GOPATH="$CACHE/gopath" HOME="${HOME:-/root}"
export GOFLAGS=-mod=vendor GOPROXY=off CGO_ENABLED=0 KUBE_GIT_VERSION=$VERSION
make WHAT="cmd/kube-apiserver cmd/kubelet cmd/kube-controller-manager cmd/kube-scheduler"
mkdir -p "$BIN.new"
for b in $BINS; do install -m 0755 "_output/local/bin/linux/$(go env GOARCH)/$b" "$BIN.new/$b"; done
echo "$PATCHES" > "$BIN.new/PATCHES"
rm -rf "$BIN"
mv "$BIN.new" "$BIN"
cd /
rm -rf "$WORK"
end=$(date +%s)
echo "built kubernetes $VERSION in $((end - start)) s into $BIN"
echo "$((end - start))" > "$CACHE/build-seconds"
