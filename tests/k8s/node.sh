#!/bin/sh
# One node of the test-bed cluster: containerd, then the kubelet, in the node's network
# namespace. Started as `unshare --mount --propagation slave nsenter --net=NS sh node.sh DIR
# SOCKET KUBELET-ARGV...`: in a mount namespace of its own (mounts made here stay here), so
# the node's own directories can stand in for the paths a kubelet and containerd use on
# every machine.
set -eu
dir=$1
sock=$2
shift 2
mkdir -p "$dir/log/pods" "$dir/log/containers" "$dir/kubelet"
mount --bind "$dir/log/pods" /var/log/pods
mount --bind "$dir/log/containers" /var/log/containers
mount --bind "$dir/kubelet" /var/lib/kubelet
containerd --config "$dir/containerd.toml" >"$dir/containerd.log" 2>&1 &
echo $! >"$dir/containerd.pid"
i=0
while [ ! -S "$sock" ]; do
  i=$((i + 1))
  if [ "$i" -gt 600 ]; then echo "containerd did not start" >&2; exit 1; fi
  sleep 0.1
done
exec "$@" >"$dir/kubelet.log" 2>&1
