"""A tiny MLPerf-style training run on the CPU, for tests only.

A logistic-regression classifier (numpy, full-batch gradient descent) is trained on a
synthetic two-class problem until its held-out accuracy reaches ``--target``; every step
of the run is logged with ``mlperf_logging.mllog`` into ``--log-file``.

What it claims in the log, and why that is honest: it logs itself as an **open
division** ``dlrm_dcnv2`` run under training ruleset 6.0.0. Open division lets the model
differ from the reference, and a logistic regression is the classic click-through-rate
baseline (DLRM's task: a binary "clicked or not" classifier). The open rules then ask for
the submission keys, cache_clear, init/run start and stop (run_stop with a status),
block and eval boundaries, at least one eval_accuracy with epoch_num and a value
<= 1, and train_samples / eval_samples / global_batch_size, all of which this program
really has. It does not log the closed-division DLRM hyperparameters (Adagrad ...): it
does not use them.

``--break no_status`` leaves the status out of run_stop and ``--break no_run_stop`` leaves
run_stop out, to make logs that the compliance checker rejects. ``--max-epochs`` below
what the target needs ends the run with status "aborted".
"""

from __future__ import annotations

import argparse
import socket
import sys

import numpy as np
from mlperf_logging import mllog
from mlperf_logging.mllog import constants as c


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-file", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--max-epochs", type=int, default=3000)
    ap.add_argument("--epochs-per-block", type=int, default=10)
    ap.add_argument("--lr", type=float, default=2.0)
    ap.add_argument(
        "--break", dest="broken", choices=["none", "no_status", "no_run_stop"], default="none"
    )
    a = ap.parse_args()

    open(a.log_file, "w").close()  # mllog appends; one run, one log
    mllog.config(filename=a.log_file)
    log = mllog.get_mllogger()
    log.event(key=c.CACHE_CLEAR, value=True)
    log.start(key=c.INIT_START)
    log.event(key=c.SUBMISSION_ORG, value="aibench-tests")
    log.event(key=c.SUBMISSION_PLATFORM, value="1xCPU")
    log.event(key=c.SUBMISSION_DIVISION, value="open")
    log.event(key=c.SUBMISSION_STATUS, value="research")
    log.event(key=c.SUBMISSION_BENCHMARK, value="dlrm_dcnv2")

    # Features on scales from 1 to 0.03, each carrying a like share of the signal: plain
    # gradient descent needs tens to hundreds of epochs, more or fewer with the seed.
    rng = np.random.default_rng(a.seed)
    n_train, n_eval, dim = 4000, 1000, 16
    scale = np.logspace(0, -1.5, dim)
    w_true = rng.standard_normal(dim) / scale
    x = rng.standard_normal((n_train + n_eval, dim)) * scale
    noise = 0.3 * np.sqrt(dim) * rng.standard_normal(n_train + n_eval)
    y = (x @ w_true + noise > 0).astype(float)
    xt, yt, xe, ye = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    w = np.zeros(dim)
    log.event(key=c.GLOBAL_BATCH_SIZE, value=n_train)
    log.event(key=c.TRAIN_SAMPLES, value=n_train)
    log.event(key=c.EVAL_SAMPLES, value=n_eval)
    log.event(key=c.OPT_NAME, value="sgd")
    log.event(key=c.OPT_BASE_LR, value=a.lr)
    log.event(key=c.SEED, value=a.seed)
    log.end(key=c.INIT_STOP)

    log.start(key=c.RUN_START)
    status, epoch, acc = "aborted", 0, 0.0
    while epoch < a.max_epochs and status != "success":
        first = epoch + 1
        count = min(a.epochs_per_block, a.max_epochs - epoch)
        log.start(key=c.BLOCK_START, metadata={"first_epoch_num": first, "epoch_count": count})
        for _ in range(count):
            p = 1.0 / (1.0 + np.exp(-(xt @ w)))
            w -= a.lr * xt.T @ (p - yt) / n_train
            epoch += 1
        log.start(key=c.EVAL_START, metadata={"epoch_num": epoch})
        acc = float(((xe @ w > 0).astype(float) == ye).mean())
        log.event(key=c.EVAL_ACCURACY, value=acc, metadata={"epoch_num": epoch})
        log.end(key=c.EVAL_STOP, metadata={"epoch_num": epoch})
        log.end(key=c.BLOCK_STOP, metadata={"first_epoch_num": first})
        if acc >= a.target:
            status = "success"
    if a.broken == "no_status":
        log.end(key=c.RUN_STOP, metadata={"epoch_num": epoch})
    elif a.broken == "none":
        log.end(key=c.RUN_STOP, metadata={"status": status, "epoch_num": epoch})
    print(f"host {socket.gethostname()} epochs {epoch} accuracy {acc:.4f} status {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
