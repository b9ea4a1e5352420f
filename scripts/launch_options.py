"""Write perfmodel/data/launch_options.csv: the option names `perfmodel launch` may emit, read from the stacks' own
published source (never a run-time dependency).

Usage: unpack the packages into one folder, then
    pip download --no-deps --only-binary :all: megatron-bridge==0.3.1 torchtitan==0.2.0 -d SRC   (unzip each wheel)
    curl the sdist megatron_core-0.16.1.tar.gz from PyPI into SRC and untar it (the wheel lacks nothing we read,
    but megatron-bridge 0.3.1 requires megatron-core >=0.15,<0.17)
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
BRIDGE = "mb/megatron/bridge"
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
                "megatron-bridge 0.3.1" if BRIDGE in file else "torchtitan 0.2.0")  # fmt: skip
            where = f"{version} {file.split('/', 1)[1]} {cls}"
            for name in fields(source / file, cls):
                out.writerow([stack, f"{section}.{name}", where])
    recipes = f"{BRIDGE}/training/mixed_precision.py"
    for name in registered(source / recipes):
        out.writerow(
            ["megatron-bridge", f"mixed_precision={name}", f"megatron-bridge 0.3.1 {recipes.split('/', 1)[1]}"]
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
