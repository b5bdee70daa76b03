"""
Bad inputs and broken run files, one row of CASES each: (script, setup, argv, what the error
says). Every row must end in exactly one line on stderr, starting with "error:", a non-zero
exit status, no traceback, and every file under the test folder as it was (nothing damaged,
nothing left behind). A reviewer adds a case by adding a row.

In each row, {root} (in argv and in what the error says) is a folder holding a finished tiny
run, {root}/r (train.py --p 7 --steps 20, checkpoints at 0, 10, 20), after `setup` has broken it.
Every row runs in this process, as its command would (train.py, analyze.py and bench.py by
their main(), the other scripts by runpy as __main__); test_train.py and test_tl_export.py run
such a bad input as a real command too.

    python -m pytest -q test_errors.py
"""
import errno
import hashlib
import json
import os
import runpy
import shutil
import subprocess
import sys
import traceback

import numpy as np
import pytest
import torch

import analyze
import bench
import runfiles
import train
from config import Config

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "experiments"))
import clock_pizza  # noqa: E402
import pack  # noqa: E402

# a config.json as train.py writes it, with some keys changed
config_text = lambda **kw: json.dumps({**Config().to_dict(), **kw})

TINY = ["--p", "7", "--d-model", "16", "--n-heads", "2", "--d-mlp", "32", "--frac", "0.5",
        "--eval-every", "5", "--ckpt-every", "10", "--steps", "20", "--device", "cpu"]
MAINS = {"train.py": train.main, "analyze.py": analyze.main, "bench.py": bench.main}


# ---------------------------------------------------------------- ways to break the run {root}/r

def edit_resume(change):
    """A setup that rewrites r/resume.pt as change(its dict) (a weights-only save)."""
    def setup(root):
        path = os.path.join(root, "r", "resume.pt")
        torch.save(change(torch.load(path, weights_only=True)), path)
    return setup


def edit_metrics(change):
    def setup(root):
        path = os.path.join(root, "r", "metrics.npz")
        with np.load(path) as f:
            m = {k: f[k] for k in f.files}
        np.savez(path, **change(m))
    return setup


def write(name, data):
    """A setup that writes bytes (or, for a str, text) to the file `name` below root."""
    def setup(root):
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
    return setup


def fresh_folder(*names):
    """A setup that leaves in root/new only the given run files of r (what a crash, a full
    disk or a hand may leave)."""
    def setup(root):
        os.makedirs(os.path.join(root, "new"))
        for n in names:
            src, dst = os.path.join(root, "r", n), os.path.join(root, "new", n)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
    return setup


def empty_checkpoints(root):
    for f in os.listdir(os.path.join(root, "r", "ckpt")):
        open(os.path.join(root, "r", "ckpt", f), "wb").close()


def remove(name):
    return lambda root: shutil.rmtree(os.path.join(root, name))


def no_setup(root):
    pass


def npz(name, **arrays):
    """A setup that writes an .npz of these arrays (object arrays pickled) below root."""
    return lambda root: np.savez(os.path.join(root, name), **arrays)


def packed(change=lambda data: data):
    """A setup that packs root's runs into root/p.npz, its bytes then changed by change."""
    def setup(root):
        path = os.path.join(root, "p.npz")
        pack.pack(root, path)
        with open(path, "rb") as f:
            data = change(f.read())
        with open(path, "wb") as f:
            f.write(data)
    return setup


def copied(setup):
    """A setup that makes r a copy of a run (no checkpoints, no resume.pt: its analysis.npz is
    read, not made), then runs setup."""
    def both(root):
        shutil.rmtree(os.path.join(root, "r", "ckpt"))
        os.remove(os.path.join(root, "r", "resume.pt"))
        setup(root)
    return both


class Marker:
    """A pickle that, unpickled, runs code: it writes the file `path`."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def crafted_pickle(name):
    """A setup that writes a .pth whose loading by pickle would create root/PWNED."""
    def setup(root):
        torch.save([Marker(os.path.join(root, "PWNED")), 1], os.path.join(root, name))
    return setup


def pickled_npz(name, key):
    """A setup that writes an .npz whose array `key`, unpickled, would create root/PWNED."""
    def setup(root):
        marker = np.array([Marker(os.path.join(root, "PWNED"))], dtype=object)
        np.savez(os.path.join(root, name), **{key: marker})
    return setup


GARBAGE = np.random.default_rng(0).bytes(2000)  # not a zip, not an .npy
RESUME = TINY[:-4] + ["--steps", "30", "--device", "cpu", "--out", "{root}", "--name", "r",
                      "--resume"]
NEW = TINY + ["--out", "{root}", "--name", "new"]

CASES = [
    # argparse: no abbreviations, one line
    ("train.py", no_setup, ["--fr", "0.4", "--out", "{root}"], "unrecognized arguments: --fr"),
    ("train.py", no_setup, ["--steps", "many", "--out", "{root}"], "invalid int value: 'many'"),
    ("bench.py", no_setup, ["--p", "31"], "bench.py times a preset's model"),
    ("bench.py", no_setup, ["nanda"], "--preset nanda"),
    ("bench.py", no_setup, ["--pre", "nanda"], "unrecognized arguments: --pre nanda"),
    ("analyze.py", no_setup, ["--bogus", "{root}"], "unrecognized arguments: --bogus"),
    ("analyze.py", no_setup, ["{root}/nope"], "is not a folder"),
    # run names stay one folder below --out
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "../x"], "one folder below"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "/tmp/abs"], "one folder below"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "a/b"], "one folder below"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "a\nb"], "control character"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "x" * 300], "at most 200"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "r\udcff"], "is not UTF-8"),
    # --out not a folder one can write in
    ("train.py", write("f", "x"), TINY + ["--out", "{root}/f"], "cannot create"),
    ("train.py", write("f", "x"), TINY + ["--out", "{root}/f/under"], "cannot create"),
    ("train.py", no_setup, TINY + ["--out", "/sys/i71"], "cannot create"),
    # more than memory: one line, not the allocator's traceback
    ("train.py", no_setup, TINY + ["--out", "{root}", "--d-model", str(2 ** 40)],
     "does not fit in memory"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--d-mlp", str(2 ** 40)],
     "does not fit in memory"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--p", "200003"], "does not fit in memory"),
    # a folder belongs to one run: a fresh run refuses any run file, never mixes two runs
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", "r"], "holds a run"),
    ("train.py", fresh_folder("config.json"), NEW + ["--resume"],
     "stopped before its first save; run the same command without --resume"),
    ("train.py", no_setup, NEW + ["--resume"], "missing checkpoint"),
    ("train.py", fresh_folder("config.json", "metrics.npz"), RESUME[:-2] + ["new", "--auto-resume"],
     "holds a run with no resume.pt to go on from"),
    ("train.py", no_setup, RESUME + ["--auto-resume"], "--resume and --auto-resume: give one"),
    # never a run in another run's folder, nor in the current folder by an empty name
    ("train.py", no_setup, TINY + ["--out", "{root}/r", "--name", "ckpt"], "is inside the run"),
    ("train.py", no_setup, TINY + ["--out", "{root}/r/ckpt"], "is inside the run"),
    ("train.py", no_setup, TINY + ["--out", ""], "--out '' names no folder"),
    ("train.py", no_setup, TINY + ["--out", "{root}", "--name", ""], "one folder below"),
    ("train.py", fresh_folder("metrics.npz"), NEW, "holds a run (metrics.npz)"),
    ("train.py", fresh_folder("ckpt"), NEW, "holds a run (ckpt)"),
    ("train.py", fresh_folder("resume.pt"), NEW, "holds a run (resume.pt)"),
    # resume.pt broken in every way
    ("train.py", write("r/resume.pt", b""), RESUME, "corrupt checkpoint"),
    ("train.py", write("r/resume.pt", b"PK\x03\x04 not a zip"), RESUME, "corrupt checkpoint"),
    ("train.py", edit_resume(lambda ck: [1, 2]), RESUME, "not a dict"),
    ("train.py", edit_resume(lambda ck: {k: v for k, v in ck.items() if k != "config"}), RESUME,
     "no config"),
    ("train.py", edit_resume(lambda ck: {k: v for k, v in ck.items() if k != "step"}), RESUME,
     "no step"),
    ("train.py", edit_resume(lambda ck: {**ck, "step": "20"}), RESUME, "'20' is not a step"),
    ("train.py", edit_resume(lambda ck: {**ck, "step": -5}), RESUME, "-5 is not a step"),
    ("train.py", edit_resume(lambda ck: {**ck, "config": {**ck["config"], "colour": 1}}), RESUME,
     "unknown config keys ['colour']"),
    ("train.py", edit_resume(lambda ck: {**ck, "optim": None}), RESUME,
     "no optimizer state"),
    ("train.py", edit_resume(lambda ck: {k: v for k, v in ck.items() if k != "optim"}), RESUME,
     "no optimizer state"),
    ("train.py", remove("r"), RESUME, "missing checkpoint"),
    # metrics.npz broken, or not of resume.pt's step
    ("train.py", write("r/metrics.npz", b""), RESUME, "corrupt"),
    ("train.py", edit_metrics(lambda m: {k: v for k, v in m.items() if k != "step"}), RESUME,
     "no step"),
    ("train.py", edit_metrics(lambda m: {**m, "test_loss": m["test_loss"][:-1]}), RESUME,
     "columns of different lengths"),
    ("train.py", edit_metrics(lambda m: {k: v[:-2] for k, v in m.items()}), RESUME,
     "ends at step 10"),
    # analyze.py: nothing it could analyse is an error, one line (each run's skip is on stdout)
    ("analyze.py", empty_checkpoints, ["{root}"], "no run could be analysed"),
    ("analyze.py", remove("r/ckpt"), ["{root}/r"], "no run could be analysed"),
    ("analyze.py", write("r/config.json", "{not json"), ["{root}"], "no run could be analysed"),
    # the experiment tables on a broken run
    ("experiments/metrics_table.py", write("r/config.json", "{not json"), ["{root}"],
     "config.json"),
    ("experiments/metrics_table.py", write("r/config.json", config_text(colour=1)), ["{root}"],
     "config.json"),
    ("experiments/claims.py", remove("r/ckpt"), ["gu_setting", "{root}"], "no checkpoints"),
    ("experiments/claims.py", write("r/config.json", "[]"), ["interventions", "{root}"],
     "config.json"),
    ("experiments/claims.py", no_setup, ["--bogus"], "unknown option --bogus"),
    ("experiments/forecast.py", no_setup, ["--bogus"], "forecast.py takes no argument"),
    ("experiments/pack.py", no_setup, ["{root}"], "give SRC DEST"),
    ("experiments/pack.py", no_setup, ["-x", "y"], "give SRC DEST"),
    # pack.py: a bad pack, unpacked, writes nothing; a run that is not one is never packed
    ("experiments/pack.py", write("p.npz", b""), ["{root}/p.npz", "{root}/out"],
     "p.npz: not a pack of runs (EOFError"),
    ("experiments/pack.py", packed(lambda data: data[:len(data) // 2]),
     ["{root}/p.npz", "{root}/out"], "p.npz: not a pack of runs (BadZipFile"),
    ("experiments/pack.py", write("p.npz", GARBAGE), ["{root}/p.npz", "{root}/out"],
     "p.npz: not a pack of runs"),
    ("experiments/pack.py", npz("p.npz", step=np.arange(3)), ["{root}/p.npz", "{root}/out"],
     "not a pack of runs (KeyError: 'index')"),
    ("experiments/pack.py", pickled_npz("p.npz", "index"), ["{root}/p.npz", "{root}/out"],
     "Object arrays cannot be loaded"),
    ("experiments/pack.py", npz("p.npz", index=np.array('{"r": {"metrics.npz": {"step": '
                                                        '["object", [2]]}}}'),
                                **{"metrics.npz/step": np.arange(2)}),
     ["{root}/p.npz", "{root}/out"], "metrics.npz/step of object"),
    ("experiments/pack.py", npz("p.npz", index=np.array('{"..": {"config.json": "text"}}'),
                                **{"config.json": np.array(["{}"])}),
     ["{root}/p.npz", "{root}/out/in"], "'..'/'config.json' is not a run's file"),
    ("experiments/pack.py", npz("p.npz", index=np.array('{"r": {"metrics.npz": {"step": '
                                                        '["int64", [20]]}}}'),
                                **{"metrics.npz/step": np.arange(3)}),
     ["{root}/p.npz", "{root}/out"], "cannot reshape"),
    ("experiments/pack.py", packed(), ["{root}/p.npz", "{root}/p.npz"], "cannot create"),
    ("experiments/pack.py", no_setup, ["{root}", "{root}/r/config.json/p.npz"],
     "cannot create"),
    ("experiments/pack.py", no_setup, ["{root}", "/proc/p.npz"], "cannot write /proc/p.npz"),
    ("experiments/pack.py", no_setup, ["{root}/r/config.json", "{root}/p.npz"],
     "no run folders"),
    ("experiments/pack.py", no_setup, ["{root}/r", "{root}/p.npz"], "no run folders"),
    ("experiments/pack.py", write("r/metrics.npz", b""), ["{root}", "{root}/p.npz"],
     "corrupt {root}/r/metrics.npz (EOFError"),
    ("experiments/pack.py", edit_metrics(lambda m: {k: v for k, v in m.items() if k != "step"}),
     ["{root}", "{root}/p.npz"], "incomplete {root}/r/metrics.npz: no step"),
    ("experiments/pack.py", write("r/analysis.npz", b"PK\x03\x04 cut short"),
     ["{root}", "{root}/p.npz"], "corrupt {root}/r/analysis.npz (BadZipFile"),
    ("experiments/pack.py", pickled_npz("r/analysis.npz", "step"), ["{root}", "{root}/p.npz"],
     "Object arrays cannot be loaded"),
    ("experiments/pack.py", write("r/config.json", ""), ["{root}", "{root}/p.npz"],
     "{root}/r/config.json is not a run's config"),
    ("experiments/pack.py", write("r/config.json", config_text(colour=1)),
     ["{root}", "{root}/p.npz"], "unknown config keys ['colour']"),
    ("experiments/pack.py", write("r/config.json", config_text(frac=2)),
     ["{root}", "{root}/p.npz"], "{root}/r/config.json: --frac 2 must be in (0, 1)"),
    ("experiments/pack.py", write("r/config.json", "{}"), ["{root}", "{root}/p.npz"],
     "{root}/r/config.json is not a run's config (ValueError: no model, op, p, seed, steps)"),
    ("experiments/claims.py", write("r/config.json", '{"seed": 0}'), ["interventions", "{root}"],
     "{root}/r/config.json is not a run's config (ValueError: no model, op, p, steps)"),
    ("experiments/pack.py", lambda root: os.remove(os.path.join(root, "r", "config.json")),
     ["{root}", "{root}/p.npz"], "{root}/r: no config.json"),
    ("experiments/pack.py", write("r/hessian.json", b"\xff{}"), ["{root}", "{root}/p.npz"],
     "cannot read {root}/r/hessian.json (UnicodeDecodeError"),
    # clock_pizza.py: a copy's analysis.npz that cannot be read, or of other measures
    ("experiments/clock_pizza.py", copied(write("r/analysis.npz", b"")), ["{root}"],
     "corrupt {root}/r/analysis.npz (EOFError"),
    ("experiments/clock_pizza.py", copied(write("r/analysis.npz", b"PK\x03\x04 cut short")),
     ["{root}"], "corrupt {root}/r/analysis.npz (BadZipFile"),
    ("experiments/clock_pizza.py", copied(write("r/analysis.npz", GARBAGE)), ["{root}"],
     "corrupt {root}/r/analysis.npz"),
    ("experiments/clock_pizza.py", copied(npz("r/analysis.npz", step=np.arange(3))), ["{root}"],
     "incomplete {root}/r/analysis.npz: no distance_irrelevance"),
    ("experiments/clock_pizza.py", copied(npz("r/analysis.npz", step=np.arange(3),
                                              distance_irrelevance=np.zeros(2))), ["{root}"],
     "corrupt {root}/r/analysis.npz: distance_irrelevance has no row a checkpoint (step has 3"),
    # the papers' released files: read without running their code
    ("experiments/nanda_released.py", crafted_pickle("mod_addition_frac_train_sweep.pth"),
     ["{root}"], "is not one of their saved runs"),
    ("experiments/nanda_released.py", no_setup, ["{root}"], "missing"),
]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("finished")
    train.main(TINY + ["--out", str(root), "--name", "r"])
    return root


def snapshot(root):
    """Every file below root: its content's hash."""
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            out[os.path.relpath(path, root)] = hashlib.sha1(open(path, "rb").read()).hexdigest()
    return out


def run(script, argv, capsys, monkeypatch):
    """(exit status, stdout, stderr) of `python script argv`, run in this process (an interpreter
    and torch started for each of the 39 rows of the experiments' scripts were most of this
    file's time): train.py,
    analyze.py and bench.py by their main(), the others as __main__ by runpy, from the
    repository's root as the command is run. An exception that escapes prints its traceback,
    as the interpreter would."""
    capsys.readouterr()
    monkeypatch.chdir(HERE)
    monkeypatch.setattr(sys, "argv", [script, *argv])
    try:
        if script in MAINS:
            MAINS[script](argv)
        else:
            runpy.run_path(os.path.join(HERE, script), run_name="__main__")
        status = 0
    except SystemExit as e:  # sys.exit("error: ...") prints its text on stderr at exit
        status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    except Exception:
        traceback.print_exc()
        status = 1
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("script,setup,argv,expected", CASES,
                         ids=[f"{c[0]}:{' '.join(c[2])[-60:]}" for c in CASES])
def test_a_bad_input_is_one_line_and_damages_nothing(script, setup, argv, expected, finished,
                                                     tmp_path, capsys, monkeypatch):
    root = tmp_path / "root"
    shutil.copytree(finished, root)
    setup(str(root))
    before = snapshot(root)
    status, out, err = run(script, [a.replace("{root}", str(root)) for a in argv], capsys,
                           monkeypatch)
    assert status != 0, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert expected.replace("{root}", str(root)) in lines[0], err
    if script == "train.py":  # a refused run says nothing else: no "run <folder>" first
        assert out == "", out
    assert snapshot(root) == before


def experiment(tmp_path, jobs):
    """An experiment script in tmp_path/experiments (with jobs.sh) whose jobs are `jobs`."""
    os.makedirs(tmp_path / "experiments")
    shutil.copy(os.path.join(HERE, "experiments", "jobs.sh"), tmp_path / "experiments")
    script = tmp_path / "experiments" / "jobs_test.sh"
    script.write_text('source "$(dirname "$0")/jobs.sh"\nOUT=runs\njobs() { '
                      + "; ".join(f'echo "{j}"' for j in jobs) + '; }\nrun_jobs "$@"\n')
    def bash(*args, env=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | (env or {})
        return subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                              timeout=60, env=env)
    return bash


def test_jobs_sh_runs_job_n_only_for_n_in_range(tmp_path):
    bash = experiment(tmp_path, [f"touch ran{i}" for i in (1, 2, 3)])
    assert bash("2").returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["experiments", "ran2"]
    for bad in ("0", "-1", "4", "1.5", "x", "OPTERR[$(touch PWNED)]+999", "2 ", "010000000000",
                "", "00"):
        r = bash(bad)
        assert r.returncode != 0 and r.stderr.startswith("error: ") and \
            r.stderr.count("\n") == 1, (bad, r.stderr)
        assert sorted(os.listdir(tmp_path)) == ["experiments", "ran2"], bad


@pytest.mark.parametrize("mode", [[], ["-j", "1"]])
@pytest.mark.parametrize("status", [130, 143])
def test_jobs_sh_stops_the_sweep_at_an_interrupted_job_and_goes_on_past_a_failed_one(
        mode, status, tmp_path):
    (tmp_path / "interrupted.sh").write_text(f"touch ran2\nexit {status}\n")
    bash = experiment(tmp_path, ["touch ran1", "false", "sh interrupted.sh", "touch ran4"])
    r = bash(*mode)
    assert r.returncode != 0 and "analyze.py" not in r.stderr  # the last command never ran
    assert sorted(os.listdir(tmp_path)) == ["experiments", "interrupted.sh", "ran1", "ran2"]


def test_jobs_sh_refuses_loose_arguments_in_one_line_before_any_job(tmp_path):
    bash = experiment(tmp_path, ["touch ran1", "touch ran2"])
    for args in (["1", "2"], ["--list", "x"], ["-j"], ["-j", "0"], ["-j", "x"], ["-j", "1", "2"],
                 ["all", "more"]):
        r = bash(*args)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and \
            r.stderr.count("\n") == 1, (args, r.stderr)
    # an array task given no job (a misspelt $SLURM_ARRAY_TASK_ID) runs no sweep
    r = bash(env=dict(SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_MIN="1", SLURM_ARRAY_TASK_MAX="2"))
    assert r.returncode == 2 and "give the job" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["experiments"]
    assert bash("--count").stdout == "2\n"


@pytest.mark.parametrize("first", [0, 1])
def test_jobs_sh_array_runs_every_job_whether_0_or_1_based_or_refuses_all(first, tmp_path):
    bash = experiment(tmp_path, [f"touch ran{i}" for i in (1, 2, 3)])
    task = lambda i, last: bash(str(i), env=dict(SLURM_ARRAY_TASK_ID=str(i),
                                                  SLURM_ARRAY_TASK_MIN=str(first),
                                                  SLURM_ARRAY_TASK_MAX=str(last)))
    for i in range(first, first + 4):  # one task too many: every task refuses
        r = task(i, first + 3)
        assert r.returncode == 2 and "submit --array=1-3 (or 0-2)" in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["experiments"]
    for i in range(first, first + 3):
        assert task(i, first + 2).returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["experiments", "ran1", "ran2", "ran3"]


def test_jobs_sh_job_n_is_repeat_safe_and_takes_the_shells_place(tmp_path):
    bash = experiment(tmp_path, ["python train.py --seed 0 --out runs", "sh -c 'echo $$ > pid'"])
    assert bash("--list").stdout.splitlines()[0] == \
        "python train.py --seed 0 --out runs --auto-resume"
    proc = subprocess.Popen(["bash", str(tmp_path / "experiments" / "jobs_test.sh"), "2"])
    assert proc.wait(timeout=60) == 0
    assert (tmp_path / "pid").read_text() == f"{proc.pid}\n"  # exec: signals reach the job


@pytest.mark.parametrize("unpacking", [False, True])
def test_pack_py_on_a_full_disk_is_one_line_and_leaves_no_temp_file(unpacking, finished,
                                                                   tmp_path, monkeypatch):
    shutil.copytree(finished, tmp_path / "runs")
    src, dest = str(tmp_path / "runs"), str(tmp_path / "p.npz")
    if unpacking:
        pack.pack(src, dest)
        src, dest = dest, str(tmp_path / "back")

    def short_write(f, **arrays):  # the disk fills up part way through an .npz
        f.write(b"PK\x03\x04")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(runfiles.np, "savez_compressed", short_write)
    with pytest.raises(SystemExit) as e:
        pack.main([src, dest])
    assert str(e.value).startswith("error: no space left on the disk") and "\n" not in str(e.value)
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".tmp")]
    assert os.path.exists(dest) == unpacking  # a pack is written whole or not at all


@pytest.mark.parametrize("setup,expected", [
    (write("m.npz", b""), "corrupt {path} (EOFError"),
    (write("m.npz", b"PK\x03\x04 cut short"), "corrupt {path} (BadZipFile"),
    (write("m.npz", GARBAGE), "corrupt {path} (ValueError"),
    (pickled_npz("m.npz", "embed.W_E"), "corrupt {path} (ValueError: Object arrays"),
    (npz("m.npz", **{"embed.W_E": np.zeros((128, 59))}), "{path} is not their model A"),
])
def test_their_model_a_broken_is_one_line_and_runs_no_code(setup, expected, tmp_path,
                                                          monkeypatch):
    setup(str(tmp_path))
    path = str(tmp_path / "m.npz")
    monkeypatch.setattr(clock_pizza, "MODEL_A", path)
    clock_pizza.model_a_values.cache_clear()  # it may hold the values of the real file
    with pytest.raises(runfiles.Stop) as e:
        clock_pizza.model_a_table()
    assert str(e.value).startswith(expected.format(path=path)) and "\n" not in str(e.value)
    assert os.listdir(tmp_path) == ["m.npz"]  # no marker file
