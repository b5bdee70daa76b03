"""
The run files and how a failure is said: a run folder holds config.json, metrics.npz, resume.pt
and ckpt/step_XXXXXX.pt; every file is written whole or not at all (save_atomic), read back
with one clear line when it is bad (load_checkpoint, load_metrics, load_npz), and written by one
process at a time (lock_run). Stop is the one-line error every script prints and exits or goes
on with.

    from runfiles import Stop, save_atomic, load_checkpoint, load_metrics
"""
import argparse
import errno
import fcntl
import json
import os
import re

import numpy as np
import torch

GROK = 0.01  # "generalized" = first step with loss <= this (Singh et al.)
KEYS = ["step", "train_loss", "train_acc", "test_loss", "test_acc", "weight_norm", "update_norm",
        "lr", "emb_lr_ratio", "collapse", "zero_loss"]  # the columns of metrics.npz
RUN_FILES = ("config.json", "metrics.npz", "resume.pt", "ckpt")  # what makes a folder a run's
LOCK = "lock"  # in a run folder while a process writes it: that process's id
CHECKPOINT = re.compile(r"step_(\d+)\.pt")  # ckpt/'s files: the weights at that step
TEMP = re.compile(r".+\.(\d+)\.tmp")  # save_atomic's temp file: <file>.<pid>.tmp
MAX_NAME = 200  # bytes of a run name (file systems allow 255 per name)


class Stop(ValueError):
    """Bad input or an unusable run: the scripts print it as one line and go on or exit."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that takes no abbreviation (--fr is not --frac) and says a bad argument in one
    line, as every other error."""

    def __init__(self, **kw):
        super().__init__(allow_abbrev=False, **kw)

    def error(self, message):
        raise SystemExit(f"error: {message} (see --help)")


def first_below(steps, values, thr=GROK):
    """The first step whose value is <= thr, or None."""
    hit = np.nonzero(np.asarray(values) <= thr)[0]
    return int(np.asarray(steps)[hit[0]]) if len(hit) else None


def printable(path):
    """A path as it can be printed, whatever bytes its name holds."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def disk_full(e):
    """Whether an error of a write means the disk (or a quota, or ulimit -f) is full: torch's
    zip writer reports a short write as a RuntimeError 'unexpected pos'."""
    if isinstance(e, OSError):
        return e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    return isinstance(e, RuntimeError) and ("unexpected pos" in str(e)
                                            or "No space left" in str(e))


def save_atomic(obj, path, compress=True):
    """Write to a temp file of this process and rename, so that a crash or a kill never leaves a
    half-written file, nor a second writer a mix. A str: text (a JSON file's too, as pack.py
    unpacks it); .npz: a dict of arrays, compressed unless compress is False; .json: JSON; else
    torch.save. A failure removes the temp file and raises Stop."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        if isinstance(obj, str):
            with open(tmp, "w", newline="") as f:
                f.write(obj)
        elif path.endswith(".npz"):  # compressed: run folders get copied (reproduction/, a GPU's)
            with open(tmp, "wb") as f:
                (np.savez_compressed if compress else np.savez)(f, **obj)
        elif path.endswith(".json"):
            with open(tmp, "w") as f:
                json.dump(obj, f, indent=1)
        else:
            torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException as e:  # a Ctrl-C too: no temp file stays behind
        if os.path.exists(tmp):
            os.remove(tmp)
        if disk_full(e):
            raise Stop(f"no space left on the disk (or over a quota or ulimit -f) writing "
                       f"{printable(path)}: free some space, then run the same command again "
                       "(train.py: with --resume)") from None
        if isinstance(e, OSError):
            raise Stop(f"cannot write {printable(path)}: {e.strerror}") from None
        raise


def message(e):
    """The first line of an exception, short, or its type when it says nothing."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:120]}" if lines else type(e).__name__


def load_checkpoint(path):
    """A checkpoint or resume.pt as written by train.py, checked: a dict with an int step >= 0,
    a config dict and the weights. Never runs code from the file (weights_only)."""
    where = printable(path)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise Stop(f"missing checkpoint {where}") from None
    except Exception as e:  # a zip cut short, an empty file, a pickle of something else
        raise Stop(f"corrupt checkpoint {where} ({message(e)})") from None
    if not isinstance(ck, dict):
        raise Stop(f"corrupt checkpoint {where}: not a dict of step, config and model")
    missing = [k for k in ("step", "config", "model") if k not in ck]
    if missing:
        raise Stop(f"corrupt checkpoint {where}: no {', '.join(missing)}")
    step = ck["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise Stop(f"corrupt checkpoint {where}: step {step!r} is not a step")
    if not isinstance(ck["config"], dict) or not isinstance(ck["model"], dict):
        raise Stop(f"corrupt checkpoint {where}: config or model is not a dict")
    return ck


def load_npz(path):
    """An .npz as {key: array}, never unpickling: Stop naming the file when it is missing or
    cannot be read."""
    where = printable(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise Stop(f"missing {where}") from None
    except Exception as e:  # empty, truncated, not a zip, a column cut short, an object array
        raise Stop(f"corrupt {where} ({message(e)})") from None


def load_metrics(path, keys=()):
    """metrics.npz as {column: 1-d array}, checked (check_metrics)."""
    return check_metrics(load_npz(path), printable(path), keys)


def check_metrics(m, where, keys=()):
    """m ({column: array}) if step and every column in keys are there, all 1-d of one length,
    steps increasing; else Stop naming `where` (a metrics.npz, or a pack's run)."""
    missing = [k for k in ("step", *keys) if k not in m]
    if missing:
        raise Stop(f"incomplete {where}: no {', '.join(missing)}")
    if any(v.ndim != 1 or len(v) != len(m["step"]) for v in m.values()):
        raise Stop(f"corrupt {where}: columns of different lengths")
    if len(m["step"]) and (m["step"].dtype.kind not in "iu" or np.any(np.diff(m["step"]) <= 0)):
        raise Stop(f"corrupt {where}: steps not increasing integers")
    return m


def check_analysis(res, where, keys):
    """res (an analysis.npz as {key: array}) if each of keys it holds has a row a checkpoint, as
    its step column; else Stop naming `where`."""
    rows = len(res["step"]) if "step" in res else None
    short = [k for k in keys if k in res and (rows is None or len(res[k]) != rows)]
    if short:
        raise Stop(f"corrupt {where}: {short[0]} has no row a checkpoint (step "
                   f"{'missing' if rows is None else f'has {rows} rows'})")
    return res


def save_metrics(metrics, run_dirs):
    for m, d in zip(metrics, run_dirs):
        save_atomic({k: np.array(v) for k, v in m.items()}, os.path.join(d, "metrics.npz"))


def run_files(run_dir):
    """The run files in a folder (empty: a fresh run may start there)."""
    return [f for f in RUN_FILES if os.path.lexists(os.path.join(run_dir, f))]


def run_state(run_dir):
    """What a folder holds, which decides whether train.py starts, resumes or refuses a run
    there: "new" (nothing, or a run stopped before its first save finished: at most step 0 is
    written, so nothing is lost by starting again), "saved" (resume.pt: it can go on) or
    "copy" (a run's files past step 0 without resume.pt: unpacked from a pack, copied, or
    resume.pt removed by hand; it cannot go on, and is not to be overwritten)."""
    if os.path.lexists(os.path.join(run_dir, "resume.pt")):
        return "saved"
    if not run_files(run_dir):
        return "new"
    ckpt = os.path.join(run_dir, "ckpt")
    if os.path.lexists(ckpt) and not os.path.isdir(ckpt):
        return "copy"
    paths, other = checkpoint_paths(run_dir)
    if other or any(int(CHECKPOINT.fullmatch(os.path.basename(p))[1]) for p in paths):
        return "copy"
    if os.path.lexists(os.path.join(run_dir, "metrics.npz")):
        try:
            if (load_metrics(os.path.join(run_dir, "metrics.npz"))["step"] > 0).any():
                return "copy"
        except Stop:  # not ours to overwrite: train.py names the file
            return "copy"
    return "new"


def checkpoint_paths(run_dir):
    """(paths of ckpt/step_XXXXXX.pt in step order, other files in ckpt/)."""
    folder = os.path.join(run_dir, "ckpt")
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    steps, other = {}, []  # step -> its checkpoint's name; the other files
    for n in names:
        m = CHECKPOINT.fullmatch(n)
        if m:
            steps[int(m[1])] = n
        else:
            other.append(os.path.join(folder, n))
    return [os.path.join(folder, steps[s]) for s in sorted(steps)], other


def check_name(name, what="--name"):
    """A run name is one folder right below --out: no separator, no '..', printable UTF-8."""
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise Stop(f"{what} {printable(name)} is not UTF-8") from None
    if name in ("", ".", "..") or "/" in name or (os.altsep and os.altsep in name):
        raise Stop(f"{what} {name!r} must name one folder below --out (no '/', not '..')")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise Stop(f"{what} {name!r} holds a control character")
    if size > MAX_NAME:
        raise Stop(f"{what} is {size} bytes long; at most {MAX_NAME}")


def lock_run(run_dir):
    """Keep other processes out of run_dir until unlock_run: an flock on run_dir/lock, which
    holds this process's id. The kernel drops the lock when a process dies, even by kill -9, so a
    lock left by a dead process is taken over. Raises Stop naming the process that holds it."""
    path = os.path.join(run_dir, LOCK)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise Stop(f"cannot write in {printable(run_dir)}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise Stop(f"{printable(run_dir)} is being written by process {holder}: wait for "
                       "it to end, or pick another --name or --out") from None
        # the holder may have removed the file as we opened it: lock the one that is there
        if os.path.exists(path) and os.path.samestat(os.fstat(fd), os.stat(path)):
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    remove_dead_temp_files(run_dir)
    return fd


def remove_dead_temp_files(run_dir):
    """Remove the temp files (see save_atomic) of processes that are dead: killed (kill -9)
    while writing, they could not."""
    for folder in (run_dir, os.path.join(run_dir, "ckpt")):
        names = os.listdir(folder) if os.path.isdir(folder) else []
        for name in names:
            m = TEMP.fullmatch(name)
            if m and not alive(int(m[1])):
                os.remove(os.path.join(folder, name))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def unlock_run(run_dir, fd):
    os.remove(os.path.join(run_dir, LOCK))  # while still locked: no one holds a removed file
    os.close(fd)

