"""
train.py's command line: the runs a command asks for, a Config and a folder each. A flag per
Config field (its --help text from the field, grouped by config.SECTIONS, its default the
preset's); the swept options take several values and every combination is a run; each run's
folder is --out joined with --name, or with a name made from the options given.

    from cli import parse_args
    cfgs, run_dirs, args = parse_args(["--ln", "pre", "mlp-pre", "--seed", "0", "1"])  # 4 runs
"""
import argparse
import hashlib
import itertools
import os
from dataclasses import fields

from config import CHOICES, PRESETS, SECTIONS, Config, flag
from runfiles import MAX_NAME, ArgumentParser, Stop, check_name, printable

# the options that take several values on the command line: every combination is a run, and
# the runs are trained together
SWEPT_OPTIONS = ("ln", "seed", "lr", "wd", "alpha")
AUTO = "auto"  # train(resume=AUTO), --auto-resume: resume, start or leave finished runs alone


def parse_args(argv=None, description=None):
    """The runs a command line asks for: a Config and a folder each, and the parsed arguments
    (device, resume, ...). description: what --help says above the options (train.py's
    docstring)."""
    args = make_parser(argv, description).parse_args(argv)
    if args.resume and args.auto_resume:
        raise Stop("--resume and --auto-resume: give one")
    if args.auto_resume:
        args.resume = AUTO
    if args.out == "":
        raise Stop("--out '' names no folder; give one (default runs)")
    given = {f.name: getattr(args, f.name) for f in fields(Config)
             if getattr(args, f.name) is not None}
    cfgs = swept_configs(args.preset, given)
    return cfgs, run_folders(cfgs, args, given), args


def make_parser(argv, description):
    """train.py's parser: --preset, a flag per Config field in its section, then the run's.
    Every Config flag defaults to None, so that a flag given is told from a default."""
    ap = ArgumentParser(description=description, epilog=presets_text(),
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        usage="python train.py [--preset NAME] [options]")
    ap.add_argument("--preset", default="singh", choices=list(PRESETS),
                    help="the paper whose defaults the run starts from (below; a flag given "
                         "wins; --preset NAME --help shows its defaults) (default singh)")
    add_config_options(ap, shown_defaults=PRESETS.get(preset_given(argv), {}))
    add_run_options(ap)
    return ap


def add_config_options(ap, shown_defaults):
    """A flag per Config field, in argument groups by SECTIONS; its help shows the default of
    the preset given (shown_defaults, over Config's own)."""
    defaults = {f.name: f.default for f in fields(Config)}
    shown = {**defaults, **shown_defaults}  # what --help says is default
    group = None
    for f in fields(Config):
        if f.name in SECTIONS:
            group = ap.add_argument_group(SECTIONS[f.name])
        default = shown[f.name]
        text = f.metadata["help"]
        if default is not None:  # a None default says what it means in the text
            text += f" (default {' '.join(map(str, default)) if f.name == 'betas' else default})"
        if f.name in SWEPT_OPTIONS:
            text += "; several: batched runs"
        kw = dict(default=None, help=text.replace("%", "%%"))
        if f.name in CHOICES:  # --ln, of several values, names its choices in its text
            choices = "{" + ",".join(CHOICES[f.name]) + "}"
            several = f.name in SWEPT_OPTIONS
            kw.update(choices=CHOICES[f.name], metavar=flag(f.name).upper() if several else choices)
        if isinstance(defaults[f.name], bool):
            group.add_argument("--" + flag(f.name), action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(defaults[f.name], tuple):
            group.add_argument("--" + flag(f.name), type=float, nargs=2, **kw)
        else:
            several = f.name in SWEPT_OPTIONS or f.name == "data_seed"
            kind = int if defaults[f.name] is None else type(defaults[f.name])
            group.add_argument("--" + flag(f.name), type=kind, nargs="+" if several else None,
                               **kw)


def add_run_options(ap):
    """The flags that are not a run's Config: where and how this command trains, and where its
    runs go."""
    run = ap.add_argument_group("run")
    run.add_argument("--device", default="auto",
                     help="auto (cuda if there is one), cpu or cuda (default auto)")
    run.add_argument("--resume", action="store_true",
                     help="continue the runs from their resume.pt; may extend --steps")
    run.add_argument("--auto-resume", action="store_true",
                     help="safe to repeat (a Slurm requeue, a sweep run again): continue runs "
                          "that have a resume.pt, start those that have none, leave finished "
                          "ones as they are")
    run.add_argument("--stop-after-grok", type=int, metavar="N",
                     help="stop N steps after the last run's test loss <= 0.01")
    run.add_argument("--fast", default=True, action=argparse.BooleanOptionalAction,
                     help="train on fast.py's table forward where it matches model.py's "
                          "(checked at start); --no-fast: on model.py's own forward")
    output = ap.add_argument_group("output")
    output.add_argument("--out", default="runs", help="folder of runs (default runs)")
    output.add_argument("--name", help="run name (default: made from the options given)")


def swept_configs(preset, given):
    """A Config per combination of the swept options' values (SWEPT_OPTIONS), on the preset's
    defaults and the flags given; several data seeds go one per --seed, paired in order (a
    split drawn apart from the init)."""
    swept = {k: given[k] for k in SWEPT_OPTIONS if k in given}
    for k, values in swept.items():
        if len(set(values)) < len(values):
            raise Stop(f"--{flag(k)}: a value is given twice")
    seeds, data_seeds = given.get("seed", [None]), given.get("data_seed", [None])
    if len(data_seeds) not in (1, len(seeds)):
        raise Stop(f"--data-seed: give one, or one per --seed ({len(seeds)})")
    base = {**PRESETS[preset], **given, "data_seed": None}
    cfgs = [Config.from_dict({**base, **dict(zip(swept, values))})
            for values in itertools.product(*swept.values())]
    for cfg in cfgs:
        if len(data_seeds) > 1:
            cfg.data_seed = data_seeds[seeds.index(cfg.seed)]
        else:
            cfg.data_seed = data_seeds[0]
    return cfgs


def run_folders(cfgs, args, given):
    """Each run's folder: --out joined with --name, or with a name made from its options."""
    try:
        args.out.encode("utf-8")
    except UnicodeEncodeError:
        raise Stop(f"--out {printable(args.out)} is not UTF-8") from None
    check_not_in_a_run(args.out)
    if args.name is not None:
        names = [args.name] * len(cfgs)
    else:
        names = [run_name(cfg, args.preset, given) for cfg in cfgs]
    for n in names:
        check_name(n, "--name" if args.name is not None else "the run name (set one with --name)")
    return [os.path.join(args.out, n) for n in names]


def preset_given(argv):
    """The --preset of argv (singh if none, or a bad one: the parser says so)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--preset", default="singh")
    return pre.parse_known_args(argv)[0].preset


def presets_text():
    """What each preset sets, a line each, as flags."""
    lines = ["presets (each sets these defaults; a flag given wins):"]
    for name, overrides in PRESETS.items():
        flags = []
        for k, v in overrides.items():
            if isinstance(v, bool):
                flags.append(f"--{'' if v else 'no-'}{flag(k)}")
            else:
                flags.append(f"--{flag(k)} {v}")
        lines.append(f"  {name:9s}{' '.join(flags) or '(the defaults above: Singh et al.)'}")
    return "\n".join(lines)


def check_not_in_a_run(out):
    """--out is a folder of runs, never a run's folder or one inside it (--out runs/r --name
    ckpt would write a run into r's checkpoints)."""
    folder = os.path.abspath(out)
    while True:
        if any(os.path.isfile(os.path.join(folder, f)) for f in ("metrics.npz", "resume.pt")):
            raise Stop(f"--out {printable(out)} is inside the run {printable(folder)}: give "
                       "the folder that holds the runs")
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def run_name(cfg, preset, given):
    """Readable and unique: preset, model, the options given explicitly (not --steps, a budget
    that --resume may extend), the seed."""
    parts = [] if preset == "singh" else [preset]
    parts.append(f"ln-{cfg.ln}" if cfg.model == "transformer" else f"mlp-{cfg.embed}")
    for k in given:
        if k in ("ln", "embed", "seed", "model", "steps"):
            continue
        value = getattr(cfg, k)
        if isinstance(value, tuple):  # --betas 0.9 0.98: betas-0.9-0.98
            value = "-".join(map(str, value))
        parts.append(f"{flag(k)}-{value}")
    name = "_".join(parts + [f"s{cfg.seed}"])
    if len(name.encode("utf-8")) <= MAX_NAME:
        return name
    # too long for a folder name: the start, readable, and a digest of the whole, unique
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    tail = f"_{digest}_s{cfg.seed}"
    head = name.encode("utf-8")[:MAX_NAME - len(tail)].decode("utf-8", "ignore").rstrip("_-.")
    return head + tail
