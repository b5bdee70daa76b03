"""
Tests: the modules import one way. Each module sits in a layer and imports only the project's
modules of lower layers (a library: any), so the models never depend on training or analysis.
An import that points up, or a new module given no layer, fails here.

    python -m pytest -q test_layers.py
"""
import ast
import glob
import os

from conftest import HERE

# Lowest first; a module imports only modules of the layers before its own.
LAYERS = [
    ("runfiles",),                          # run files, Stop and GROK: nothing ours
    ("stats", "plots"),                     # rank tests and the bootstrap, drawing
    ("data", "fourier", "model", "optim"),  # the task, the Fourier algorithm, the models and their
                                            # registries, the update: each on its own
    ("config", "fast"),                     # the options (reading data's and model's registries),
                                            # the speed layer
    ("measures",),                          # the measures (the LLC's chains on the fast forward)
    ("summary",),                           # the summary table of analysed runs
    ("cli",),                               # train.py's command line: its runs and their folders
    ("train", "analyze"),                   # training and analysis: neither imports the other
    ("bench", "tl_export"),                 # the step benchmark: train.py's step; the
                                            # TransformerLens export of a checkpoint
    # experiments/: the results layer, each layer on the ones before
    ("pack", "singh_numbers", "singh_released", "seedstats", "llc_calibration"),  # the packs, the
                                            # papers' numbers and files, per-run statistics, the
                                            # LLC's settings on checkpoints
    ("runsets",),                           # the run copies and how claims and tables read them
    ("rule", "metrics_table", "minibatch_table", "forecast", "clock_pizza"),
                                            # the verdict rule and its tests; tables and
                                            # computations over a folder of runs
    ("render",),                            # the verdict table, the registry, shared tables
    ("nanda", "singh", "gu", "alquabeh", "accelerators", "beyond"),  # a module a paper or topic:
                                            # its claims, sections and runs; none imports another
    ("claims",),                            # collects the papers' claims and sections
    ("verdicts", "nanda_released", "llc_devinterp"),  # scripts
    ("conftest",),     # the tests' shared helpers
    ("tests",),        # test_*.py: one test file never imports another (helpers: conftest)
]
PATHS = glob.glob(os.path.join(HERE, "*.py")) + glob.glob(os.path.join(HERE, "experiments", "*.py"))
EXPERIMENTS = {os.path.basename(q)[:-3] for q in PATHS if os.path.dirname(q) != HERE}
MODULES = {os.path.basename(q)[:-3] for q in PATHS}


def layer(name):
    """The index in LAYERS of a project module, or None if it has no layer."""
    if name.startswith("test_"):
        name = "tests"
    return next((i for i, names in enumerate(LAYERS) if name in names), None)


def imported(source):
    """The top-level names of the modules a source imports anywhere (a late import inside a
    function is as much a dependency as one at the top)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def upward(name, source):
    """The project modules that module `name`, of this source, may not import: those of its own
    layer or above."""
    bad = []
    for m in sorted(imported(source) & MODULES):
        if layer(m) >= layer(name):
            bad.append(m)
    return bad


def test_every_module_has_a_layer():
    assert "model" in MODULES and "claims" in EXPERIMENTS  # the globs found the files
    assert [m for m in sorted(MODULES) if layer(m) is None] == []


def test_imports_only_go_down():
    found = {}
    for q in PATHS:
        name = os.path.basename(q)[:-3]
        with open(q) as f:
            bad = upward(name, f.read())
        if bad:
            found[name] = bad
    assert found == {}


def test_the_rule_catches_an_upward_import():
    assert upward("model", "import math\nimport torch\n") == []
    assert upward("model", "from config import Config\n") == ["config"]   # a layer up
    assert upward("model", "import data\n") == ["data"]                    # the same layer
    assert upward("measures", "def f():\n    import train as T\n") == ["train"]  # a late import
    assert upward("summary", "from analyze.sub import x\n") == ["analyze"]
    assert upward("analyze", "from train import loss_fn\n") == ["train"]  # apart, one layer
    assert upward("test_model", "from test_train import helper\n") == ["test_train"]
    assert upward("runfiles", "import claims\n") == ["claims"]  # the core never imports experiments
    assert upward("claims", "import gu\nimport analyze\n") == []
    assert upward("rule", "import claims\n") == ["claims"]  # the verdict rule never reads a paper
    assert upward("singh", "import nanda\n") == ["nanda"]   # nor one paper's module another
