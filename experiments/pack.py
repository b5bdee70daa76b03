"""
One compressed file per experiment holding every run of it (a pack), and the way back to run
folders. The repository keeps its runs as reproduction/<experiment>/runs.npz rather than a
folder per run; a table reads a pack through a temporary folder of unpacked runs.

    python experiments/pack.py runs/seed_coupling reproduction/seed_coupling/runs.npz
    python experiments/pack.py reproduction/singh_grids/runs.npz runs/singh_grids   # unpack
    python experiments/pack.py runs/clock_pizza reproduction/clock_pizza/runs.npz \
        --drop final_attn_a final_neurons   # without arrays no table reads (FLOAT16's)

(to add runs to a pack: unpack it into the folder of the new runs, then pack that folder)

    import pack; runs = pack.read("reproduction/seed_coupling/runs.npz")
    runs["ln-off_data-seed-10000_s0"]["metrics.npz"]["test_loss"]   # one run's curve

A pack holds every run folder right below the source folder (one with metrics.npz): its JSON
files (config.json, hessian.json) as text and its .npz files' arrays; checkpoints stay out (a
copy brings its analysis.npz instead). It is an .npz of columns, one a file or array name:
"config.json" holds the runs' texts in run order, "metrics.npz/test_loss" every run's test loss
one after the other (flattened), and "index" (JSON) {run: {file: "text" or {key: [dtype,
shape]}}} says which runs have which, in what dtype and shape, so read() cuts the columns back
into runs. Runs side by side compress together: their steps, configs and schedules repeat.
Integer arrays and text are kept exactly; float64 arrays are stored as float32, which halves
the pack and changes no number a table prints, but FLOAT64's keys; FLOAT16's are arrays only a
figure draws. read() and unpack() give each array back in the dtype it had.
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from analyze import run_config  # noqa: E402
from runfiles import (Stop, load_metrics, load_npz, message, printable,  # noqa: E402
                      save_atomic)

PACK = "runs.npz"  # an experiment folder's pack: reproduction/<experiment>/runs.npz
# keys kept in float64, where rounding to float32 would move a number a table prints: none yet
# (claims.py's sections and the metrics, minibatch and gu tables of every copy printed the same
# from float32 packs as from the float64 run folders)
FLOAT64 = ()
# the per-run heatmaps of plots.py (attention to a, top neurons' activations over (a, b)), read
# by no table: 11 bits of mantissa are more than a colour map shows, and they are half the runs'
# bytes in float32
FLOAT16 = ("final_attn_a", "final_neurons")


def run_folders(root):
    """Names of the run folders right below root (those with metrics.npz), in name order."""
    if not os.path.isdir(root):
        return []
    return sorted(name for name in os.listdir(root)
                  if os.path.isfile(os.path.join(root, name, "metrics.npz")))


def has_runs(root):
    """Whether root holds runs: run folders, or a pack."""
    return bool(run_folders(root)) or os.path.isfile(os.path.join(root, PACK))


def stored(key, a):
    """An array as the pack stores it: float64 as float32, but FLOAT64's and FLOAT16's keys."""
    if a.dtype != np.float64 or key in FLOAT64:
        return a
    fits16 = not (np.abs(a) > np.finfo(np.float16).max).any()
    return a.astype(np.float16 if key in FLOAT16 and fits16 else np.float32)


def packed_files(folder, drop=()):
    """What a pack keeps of a run folder: {JSON file: its text, .npz file: {key: array} but
    drop's}, each checked (config.json a run's config, metrics.npz its metrics): a bad one is
    a Stop naming it, never packed."""
    try:
        run_config(folder)
    except Stop as e:  # a bad option is named, not the file it is in
        config = printable(os.path.join(folder, "config.json"))
        raise Stop(str(e) if printable(folder) in str(e) else f"{config}: {e}") from None
    files = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".json"):
            try:
                with open(path) as f:
                    files[name] = f.read()
                json.loads(files[name])
            except (OSError, ValueError) as e:  # a folder, not UTF-8, not JSON
                raise Stop(f"cannot read {printable(path)} ({message(e)})") from None
        elif name.endswith(".npz"):
            arrays = load_metrics(path) if name == "metrics.npz" else load_npz(path)
            files[name] = {k: a for k, a in arrays.items() if k not in drop}
    return files


def pack(src, dest, drop=()):
    """Every run folder right below src in one compressed file at dest (written atomically),
    but the arrays named in drop; returns the runs' names."""
    runs = run_folders(src)
    if not runs:
        raise Stop(f"no run folders (with metrics.npz) in {printable(src)}")
    index, columns = {}, {}
    for run in runs:
        index[run] = {}
        for name, content in packed_files(os.path.join(src, run), drop).items():
            if isinstance(content, str):
                columns.setdefault(name, []).append(content)
                index[run][name] = "text"
                continue
            index[run][name] = {k: [str(a.dtype), list(a.shape)] for k, a in content.items()}
            for k, a in content.items():
                columns.setdefault(f"{name}/{k}", []).append(stored(k, a).ravel())
    columns = {col: np.array(parts) if isinstance(parts[0], str) else np.concatenate(parts)
               for col, parts in columns.items()}
    columns["index"] = np.array(json.dumps(index))
    make_folder(os.path.dirname(os.path.abspath(dest)))
    save_atomic(columns, dest)
    return runs


def make_folder(folder):
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:  # a file in the way, no permission, a read-only disk
        raise Stop(f"cannot create {printable(folder)}: {e.strerror}") from None


def read(pack_path):
    """{run: {file: its text (JSON files) or {key: array in the dtype it had}}} of a pack;
    Stop naming it where it is not one."""
    try:
        with np.load(pack_path, allow_pickle=False) as z:
            columns = {col: z[col] for col in z.files}
        return cut(json.loads(str(columns.pop("index"))), columns)
    except Exception as e:  # empty, cut short, not an .npz, an object array, no index or one
        # that is not of its columns
        raise Stop(f"{printable(pack_path)}: not a pack of runs ({message(e)})") from None


def cut(index, columns):
    """The runs of a pack: its columns cut as its index says (read)."""
    used = dict.fromkeys(columns, 0)  # how much of each column the runs before took
    runs = {}
    for run, files in index.items():
        runs[run] = {}
        for name, keys in files.items():
            # unpack writes it as run/name below its folder: no path, no '..', a file it can
            # write (JSON text, an .npz of arrays)
            if run in ("", ".", "..") or "/" in run + name or "\0" in run + name or \
                    not name.endswith(".json" if keys == "text" else ".npz"):
                raise ValueError(f"{run!r}/{name!r} is not a run's file")
            if keys == "text":
                runs[run][name] = str(columns[name][used[name]])
                used[name] += 1
                continue
            runs[run][name] = {}
            for k, (dtype, shape) in keys.items():
                col, size = f"{name}/{k}", int(np.prod(shape))
                if np.dtype(dtype).hasobject:  # unpacked by pickle, which can run any code
                    raise TypeError(f"{col} of {dtype}")
                flat = columns[col][used[col]:used[col] + size]
                runs[run][name][k] = flat.astype(dtype).reshape(shape)
                used[col] += size
    return runs


def unpack(pack_path, dest_dir, compress=True):
    """The run folders of a pack written back below dest_dir (each file atomically); returns
    the runs' names. compress=False for a temporary folder, read once and removed: compressing
    its .npz files was most of the time unpacking took."""
    runs = read(pack_path)
    for run, files in runs.items():
        make_folder(os.path.join(dest_dir, run))
        for name, content in files.items():
            save_atomic(content, os.path.join(dest_dir, run, name), compress)
    return list(runs)


@contextlib.contextmanager
def opened(root):
    """A folder of run folders for root: root itself where it has run folders (runs/, a live
    experiment), else its pack unpacked in a temporary folder, removed on leaving. What is
    printed or raised inside names root instead of the temporary folder, and the files a table
    draws there beside the runs (figures/) are copied to root, so a table reads and writes as it
    would on the run folders."""
    if run_folders(root) or not os.path.isfile(os.path.join(root, PACK)):
        yield root
        return
    tmp = tempfile.mkdtemp(prefix="runs_")
    printed = io.StringIO()
    try:
        runs = set(unpack(os.path.join(root, PACK), tmp, compress=False))
        with contextlib.redirect_stdout(printed):
            yield tmp
        for folder, _, names in os.walk(tmp):
            rel = os.path.relpath(folder, tmp)
            if rel.split(os.sep)[0] in runs:
                continue
            for name in names:
                os.makedirs(os.path.join(root, rel), exist_ok=True)
                shutil.copyfile(os.path.join(folder, name), os.path.join(root, rel, name))
    except Stop as e:
        raise Stop(str(e).replace(tmp, root)) from None
    finally:
        sys.stdout.write(printed.getvalue().replace(tmp, root))
        shutil.rmtree(tmp)


def main(argv):
    drop = None  # --drop KEY ...: the arrays to leave out of a pack being made
    if "--drop" in argv:
        at = argv.index("--drop")
        argv, drop = argv[:at], argv[at + 1:]
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    if len(argv) != 2 or argv[0].startswith("-"):  # one line, as every other error
        sys.exit(f"error: give SRC DEST (a folder of runs and a pack .npz, or the other way "
                 f"round), not {' '.join(argv) or 'nothing'}; --help shows how")
    src, dest = argv
    if drop is not None and (not drop or src.endswith(".npz")):
        sys.exit("error: --drop comes after SRC DEST.npz of a pack being made and names the "
                 "arrays to leave out")
    try:
        if src.endswith(".npz"):
            if not os.path.isfile(src):
                raise Stop(f"no pack {src}")
            print(f"{dest}: {len(unpack(src, dest))} runs from {src}")
        elif dest.endswith(".npz"):
            runs = pack(src, dest, drop or ())
            print(f"{dest}: {len(runs)} runs, {os.path.getsize(dest) / 1e6:.2f} MB")
        else:
            raise Stop(f"{dest}: a pack's name ends in .npz")
    except Stop as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
