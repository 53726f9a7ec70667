# Set-up and the two commands of the README:
#   make acceptance   install what the acceptance suite runs, then run it on this machine
#   make test         install everything the test beds use, then run the test suite
# Needs root (or sudo) for the system packages the tools come from (Debian/Ubuntu).

PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?=
# Test processes side by side (pytest-xdist). Three times the 2 cores of a small machine
# pays: many tests wait on processes, sockets and test beds (a cluster coming up, a soak's
# clock) rather than compute, and the others fill the cores meanwhile (measured on 2 cores:
# 4 workers 7:57, 6 workers 7:11).
TEST_JOBS ?= 6
SUITE ?= acceptance
AIBENCH_ARGS ?=

# What the acceptance suite (and the preflight step in it) runs on this machine: fio and
# iperf3 for the steps; lsblk, findmnt and dmesg (util-linux) for the preflight's disk,
# mount and kernel-log facts. The rest of the preflight reads /proc and /sys or finds a
# vendor tool absent (a fact, not an error); SSH goes through asyncssh, not a client binary.
# (Another SUITE may run more tools: see TEST_PACKAGES.)
ACCEPTANCE_PACKAGES = fio iperf3 util-linux

# What the test beds use on top: Slurm, MPI, the storage and object-store beds, the
# Kubernetes bed's build, the browser and font tests, BMC simulators ...
TEST_PACKAGES = $(ACCEPTANCE_PACKAGES) iperf perftest openssh-server openssh-client munge slurm-wlm \
	openmpi-bin libopenmpi-dev libpmix-dev chromium iproute2 nftables iputils-ping procps \
	prometheus prometheus-pushgateway \
	fonts-noto-cjk fonts-dejavu-core fontconfig \
	haproxy nginx \
	stress-ng openipmi ipmitool openssl \
	ceph-mon ceph-osd ceph-mds ceph-fuse radosgw redis-server redis-tools \
	glusterfs-server glusterfs-client \
	golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev \
	etcd-server containerd runc containernetworking-plugins \
	busybox-static iptables gcc libc6-dev

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: acceptance test system-packages acceptance-packages venv lint clean catalogs \
	k8s-binaries

acceptance: acceptance-packages venv
	$(VENV)/bin/aibench run --suite $(SUITE) $(AIBENCH_ARGS)

# --dist loadgroup: the tests of one test bed, and those of one module, stay on one worker
# (tests/conftest.py gives each test its xdist_group)
# pytest keeps the test modules it rewrites (for its assertion messages) as bytecode, and
# so does Python the modules the tests and their aibench processes import: where the
# environment sets PYTHONDONTWRITEBYTECODE, every worker and every process would compile
# them again (about 2.5 s of CPU a worker for the collection alone)
test: system-packages venv k8s-binaries
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python -m pytest -n $(TEST_JOBS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

# The Kubernetes test bed's kube-* binaries, built once from Debian's source package and
# cached outside the checkout (AIBENCH_K8S_CACHE, default /var/cache/aibench-k8s); a no-op
# when the cache has them.
k8s-binaries: system-packages
	$(SUDO) bash tests/k8s/build-cluster.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# system-packages: everything the tests use; acceptance-packages: the acceptance suite's own
system-packages: PACKAGES = $(TEST_PACKAGES)
acceptance-packages: PACKAGES = $(ACCEPTANCE_PACKAGES)
system-packages acceptance-packages:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test]'
	# the editable install imports from the source tree: compile it once here, so that a
	# run under PYTHONDONTWRITEBYTECODE=1 does not compile every module each time it starts
	$(VENV)/bin/python -m compileall -q aibench
	touch $@

# The report's translations: extract the fixed text into the .pot, merge it into each .po
# (translate the new entries there), compile the .mo files (pip install compiles them too)
catalogs: venv
	$(VENV)/bin/pybabel extract -F babel.cfg -k N_ --add-comments=Translators: --no-wrap \
	  --sort-by-file --project aibench --copyright-holder "aibench contributors" \
	  -o aibench/locale/aibench.pot .
	$(VENV)/bin/pybabel update -i aibench/locale/aibench.pot -d aibench/locale -D aibench --no-wrap
	$(VENV)/bin/pybabel compile -d aibench/locale -D aibench --statistics

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
