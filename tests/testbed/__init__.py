"""The multi-host test bed: network namespaces as hosts, sshd on each, a Slurm cluster.

See :mod:`tests.testbed.bed` (the bed and its fault helpers), :mod:`tests.testbed.net`,
:mod:`tests.testbed.sshd`, :mod:`tests.testbed.slurm` and the pytest fixtures in
:mod:`tests.testbed.fixtures`.
"""
