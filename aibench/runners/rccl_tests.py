"""RCCL-tests runner: ROCm's fork of NCCL-tests on AMD Instinct GPUs.

The same programs and options as NCCL-tests (``all_reduce_perf -b MIN -e MAX -f 2 -g 1
...``, launched directly, by ``mpirun`` or by ``srun``: see
:mod:`aibench.runners.nccl_tests`), built against RCCL from a ROCm install. What differs:

* the collectives include ``alltoallv`` (RCCL has it, NCCL-tests does not);
* the binaries are found in the option ``bin_dir``, else the node's ``tool_dirs:
  {rccl-tests: DIR}``, else on the PATH;
* the environment is RCCL's and ROCm's: ``NCCL_*`` (RCCL reads the NCCL names),
  ``RCCL_*`` and ``HSA_*`` variables go in ``env`` (e.g. ``HSA_FORCE_FINE_GRAIN_PCIE: 1``,
  ``NCCL_MIN_NCHANNELS``); the named NCCL options of NCCL-tests apply as they are;
* the version comes from the ``rccl-tests: Version X`` header line of the output;
* records, facts and the report section carry the name ``rccl-tests`` (the report draws
  them with the NCCL-tests section, titled RCCL tests).

Tested without GPUs: the binaries replaced by a replay of a real public RCCL-tests output
(ROCm 4.2, 2 x MI100), launched by Open MPI ``mpirun`` over ssh across two test hosts.
"""

from __future__ import annotations

import re
from typing import ClassVar

from aibench.config import Strict
from aibench.parsers._nccl_table import COLLECTIVES, RCCL_ONLY
from aibench.runners.nccl_tests import NCCL_TRAITS, NcclTestsOptions, NcclTestsRunner
from aibench.traits import Traits


class RcclTestsOptions(NcclTestsOptions):
    """Options of an rccl-tests step: those of nccl-tests, with RCCL's collectives."""

    collectives: ClassVar[tuple[str, ...]] = (*COLLECTIVES, *RCCL_ONLY)


class RcclTestsRunner(NcclTestsRunner):
    traits: ClassVar[Traits] = Traits(
        units=NCCL_TRAITS.units,
        lower_is_better=NCCL_TRAITS.lower_is_better,
        pair_series=NCCL_TRAITS.pair_series,
        keep_one=NCCL_TRAITS.keep_one,
        section="nccl-tests",
        title="RCCL tests (collective bandwidth, ROCm)",
    )
    name: ClassVar[str] = "rccl-tests"
    tool: ClassVar[str] = "rccl-tests"
    Options: ClassVar[type[Strict]] = RcclTestsOptions
    version_pattern: ClassVar[re.Pattern[str]] = re.compile(
        r"^#?\s*rccl-tests: Version (\S+)", re.M
    )


RUNNER = RcclTestsRunner()
