"""Write perfmodel/data/launch_options.csv: the option names `perfmodel launch` may emit, read from the stacks' own
published source (never a run-time dependency).

Usage: unpack the packages into one folder, then
    pip download --no-deps --only-binary :all: megatron-bridge==0.3.1 torchtitan==0.2.0 nemo-toolkit==2.7.3 -d SRC
    (unzip each wheel: megatron-bridge into SRC/mb, torchtitan into SRC/tt2, nemo-toolkit into SRC/nemo2)
    curl the sdists megatron_core-0.16.1.tar.gz (what megatron-bridge 0.3.1 requires: >=0.15,<0.17) and
    megatron_core-0.17.1.tar.gz (the first whose sdist carries Megatron-LM's megatron/training) from PyPI into SRC
    and untar them
    python scripts/launch_options.py SRC > perfmodel/data/launch_options.csv
Each option is a dataclass field of the class the stack reads that section from (Megatron-Bridge's ConfigContainer
sections; torchtitan's JobConfig sections), or a registered recipe name (Megatron-Bridge's mixed_precision).
"""

from __future__ import annotations

import ast
import csv
import sys
from pathlib import Path

MEGATRON_CORE = "megatron_core-0.16.1/megatron/core"
MEGATRON_LM = "megatron_core-0.17.1/megatron"
"""megatron-core 0.17.1's sdist carries Megatron-LM's training code (megatron/training: arguments.py, training.py)."""
MLM_FACTORIES = {
    "TransformerConfig": [
        ("core/model_parallel_config.py", "ModelParallelConfig"),
        ("core/transformer/transformer_config.py", "TransformerConfig"),
    ],
    "TrainingConfig": [("training/config/training_config.py", "TrainingConfig")],
    "DistributedInitConfig": [("training/config/common_config.py", "DistributedInitConfig")],
}
"""The dataclasses Megatron-LM's arguments.py turns into flags (ArgumentGroupFactory), with their bases' files."""
BRIDGE = "mb/megatron/bridge"
NEMO = "nemo2/nemo"
"""nemo-toolkit 2.7.3, the last release with NeMo 2's LLM collection (3.0 moved it to Megatron-Bridge)."""
NEMO_INITS = [
    ("trainer.strategy", f"{NEMO}/lightning/pytorch/strategies/megatron_strategy.py", "MegatronStrategy"),
    ("trainer.plugins", f"{NEMO}/lightning/pytorch/plugins/mixed_precision.py", "MegatronMixedPrecision"),
    ("data", f"{NEMO}/collections/llm/gpt/data/mock.py", "MockDataModule"),
]
"""NeMo 2's classes whose constructor arguments a recipe's `nemo llm pretrain` overrides set (recipes build them with
run.Config(cls, ...)): the strategy, the precision plugin, the data module."""
TORCHTITAN = "tt2/torchtitan/config/job_config.py"
SECTIONS = {
    "megatron-bridge": [
        ("model", f"{MEGATRON_CORE}/model_parallel_config.py", "ModelParallelConfig"),
        ("model", f"{MEGATRON_CORE}/transformer/transformer_config.py", "TransformerConfig"),
        ("model", f"{BRIDGE}/models/gpt_provider.py", "GPTModelProvider"),
        ("train", f"{BRIDGE}/training/config.py", "TrainingConfig"),
        ("ddp", f"{MEGATRON_CORE}/distributed/distributed_data_parallel_config.py", "DistributedDataParallelConfig"),
        ("optimizer", f"{MEGATRON_CORE}/optimizer/optimizer_config.py", "OptimizerConfig"),
        ("dist", f"{BRIDGE}/training/config.py", "DistributedInitConfig"),
        ("comm_overlap", f"{BRIDGE}/training/comm_overlap.py", "CommOverlapConfig"),
    ],
    "nemo": [
        ("trainer.strategy.ddp", f"{MEGATRON_CORE}/distributed/distributed_data_parallel_config.py",
         "DistributedDataParallelConfig"),
        ("model.config", f"{MEGATRON_CORE}/model_parallel_config.py", "ModelParallelConfig"),
        ("model.config", f"{MEGATRON_CORE}/transformer/transformer_config.py", "TransformerConfig"),
        ("model.config", f"{NEMO}/collections/llm/gpt/model/base.py", "GPTConfig"),
        ("optim.config", f"{MEGATRON_CORE}/optimizer/optimizer_config.py", "OptimizerConfig"),
    ],
    "torchtitan": [
        (section, TORCHTITAN, cls)
        for section, cls in [
            ("training", "Training"), ("parallelism", "Parallelism"), ("activation_checkpoint", "ActivationCheckpoint"),
            ("compile", "Compile"), ("model", "Model"), ("quantize.linear.float8", "Float8Linear"),
            ("quantize.linear.mx", "MXLinear"),
        ]
    ],
}  # fmt: skip


def fields(path: Path, name: str) -> list[str]:
    """The annotated class-level fields of class `name` in `path` (a dataclass's fields, in order)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)
    return [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def init_parameters(path: Path, name: str) -> list[str]:
    """The keyword parameters of class `name`'s __init__ in `path` (not self)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return [a.arg for a in (*init.args.args, *init.args.kwonlyargs) if a.arg != "self"]


def _call_name(node: ast.expr) -> str:
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""


def factory_flags(source: Path, cls: str, exclude: set[str]) -> list[str]:
    """The flags megatron/training/argument_utils.py ArgumentGroupFactory makes of a dataclass's fields: `--name`
    (underscores as hyphens), `--no-name` and `--disable-name` for a bool that defaults to True, the field's
    `argparse_meta` arg_names where it has them; fields with init=False or excluded make none."""
    flags = []
    for statement in ast.parse(source.read_text(encoding="utf-8")).body:
        if not (isinstance(statement, ast.ClassDef) and statement.name == cls):
            continue
        for item in statement.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            name, value = item.target.id, item.value
            keywords = (
                {k.arg: k.value for k in value.keywords} if value is not None and _call_name(value) == "field" else {}
            )
            if name in exclude or (isinstance(keywords.get("init"), ast.Constant) and keywords["init"].value is False):
                continue
            meta = ast.literal_eval(keywords["metadata"]) if "metadata" in keywords else {}
            default = keywords.get("default", value)
            if "arg_names" in meta.get("argparse_meta", {}):
                flags += meta["argparse_meta"]["arg_names"]
            elif ast.unparse(item.annotation) == "bool" and isinstance(default, ast.Constant) and default.value is True:
                flags += [f"--no-{name}".replace("_", "-"), f"--disable-{name}".replace("_", "-")]
            else:
                flags.append("--" + name.replace("_", "-"))
    return flags


def megatron_lm_flags(source: Path) -> list[tuple[str, str]]:
    """(flag, where) for every flag Megatron-LM's parser defines: its explicit add_argument calls and the flags its
    ArgumentGroupFactory calls make of TransformerConfig (less the call's exclude list), TrainingConfig and
    DistributedInitConfig."""
    arguments = source / MEGATRON_LM / "training/arguments.py"
    tree = ast.parse(arguments.read_text(encoding="utf-8"))
    where = f"megatron-core 0.17.1 {MEGATRON_LM.split('/', 1)[1]}/training/arguments.py"
    found = [
        (arg.value, where)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")
    ]
    excluded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "exclude" for t in node.targets):
            excluded |= set(ast.literal_eval(node.value))
    for factory, classes in MLM_FACTORIES.items():
        skip = excluded if factory == "TransformerConfig" else set()
        for path, cls in classes:
            found += [(flag, f"{where} ArgumentGroupFactory({factory}): {path} {cls}") for flag in
                      factory_flags(source / MEGATRON_LM / path, cls, skip)]  # fmt: skip
    return found


def registered(path: Path) -> list[str]:
    """Megatron-Bridge's mixed-precision recipe names: the functions decorated with @register."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "register" for d in n.decorator_list)
    ]


def main(source: Path) -> None:
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["stack", "option", "source"])
    for stack, sections in SECTIONS.items():
        for section, file, cls in sections:
            version = "megatron-core 0.16.1" if MEGATRON_CORE in file else (
                "megatron-bridge 0.3.1" if BRIDGE in file else "nemo-toolkit 2.7.3" if NEMO in file
                else "torchtitan 0.2.0")  # fmt: skip
            where = f"{version} {file.split('/', 1)[1]} {cls}"
            for name in fields(source / file, cls):
                out.writerow([stack, f"{section}.{name}", where])
    for section, file, cls in NEMO_INITS:
        for name in init_parameters(source / file, cls):
            out.writerow(["nemo", f"{section}.{name}", f"nemo-toolkit 2.7.3 {file.split('/', 1)[1]} {cls}.__init__"])
    for flag, where in megatron_lm_flags(source):
        out.writerow(["megatron-lm", flag, where])
    recipes = f"{BRIDGE}/training/mixed_precision.py"
    for name in registered(source / recipes):
        out.writerow(
            ["megatron-bridge", f"mixed_precision={name}", f"megatron-bridge 0.3.1 {recipes.split('/', 1)[1]}"]
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
