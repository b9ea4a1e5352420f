"""The training stack's own configuration for a predicted layout (`perfmodel launch`).

Option names are the stacks' own, read from their published packages (scripts/launch_options.py writes the list
to perfmodel/data/launch_options.csv; tests check every emitted name against it):
- megatron-bridge: Megatron-Bridge 0.3.1 (its ConfigContainer sections, mixed-precision recipe names) over
  Megatron-Core 0.16.1 (TransformerConfig, DistributedDataParallelConfig, OptimizerConfig), as the `key=value`
  overrides its `parse_hydra_overrides` (megatron/bridge/training/utils/omegaconf_utils.py) applies to a recipe.
- megatron-lm: Megatron-LM's `pretrain_gpt.py` arguments as megatron-core 0.17.1's sdist ships its parser
  (megatron/training/arguments.py: its add_argument calls and the flags ArgumentGroupFactory makes of
  TransformerConfig, TrainingConfig and DistributedInitConfig), one a line.
- nemo: NeMo 2 (nemo-toolkit 2.7.3, the last release with its LLM collection), the `key=value` overrides
  `nemo llm pretrain --factory RECIPE` takes: the constructor arguments of the recipe's MegatronStrategy
  (trainer.strategy), MegatronMixedPrecision (trainer.plugins) and data module (data), and the Megatron-Core 0.16.1
  configs under them (model.config, optim.config, trainer.strategy.ddp).
- torchtitan: torchtitan 0.2.0, a job TOML (torchtitan/config/job_config.py JobConfig; `--job.config_file`).
A layout the stack cannot run is refused with one line naming the setting.
"""

from __future__ import annotations

import csv
import shlex
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import RUN_SETTINGS, Scenario, run_settings
from perfmodel.inputs.stacks import Knobs, get_stack
from perfmodel.physics.parallel import Layout
from perfmodel.physics.schedule import UNEVEN_EXTRA_UNITS
from perfmodel.physics.step import delayed_scaling
from perfmodel.planning.predict import Prediction, context_for

PROFILES = {"megatron-lm": "megatron", "megatron-bridge": "megatron", "nemo": "megatron", "torchtitan": "torchtitan"}
"""Each stack perfmodel emits a config for, and the stack profile (inputs/stacks.py) its prediction uses."""
NOT_DECIDED = (
    "perfmodel decides the layout, batch, recompute, sharding and precision only; set the rest yourself: data paths "
    "and blend, tokenizer, checkpoint and log folders, model definition, optimizer and schedule, iterations"
)
BRIDGE_PRECISION = {
    "bf16": "bf16_mixed",
    "fp8": "bf16_with_fp8_current_scaling_mixed",
    "mxfp8": "bf16_with_mxfp8_mixed",
    "nvfp4": "bf16_with_nvfp4_mixed",
}
"""perfmodel precision -> Megatron-Bridge mixed-precision recipe (mixed_precision.py's registered names)."""
BRIDGE_DELAYED = "bf16_with_fp8_delayed_scaling_mixed"
"""Megatron-Bridge's FP8 recipe with delayed scaling (mixed_precision.py), for a run priced with it (fp8_recipe
'delayed', or a release before 25.09: `_priced_knobs`); the other Megatron stacks set their fp8_recipe to 'delayed'
(`_fp8_delayed`)."""
MEGATRON_SHARDING = {2: "optim_grads", 3: "optim_grads_params"}
"""--zero 2|3 -> Megatron-FSDP's data_parallel_sharding_strategy (Megatron-Core's DDP config, Megatron-LM's flag)."""
MEGATRON_LM_PRECISION: dict[str, dict[str, object]] = {
    "bf16": {},
    "fp8": {"--fp8-format": "hybrid", "--fp8-recipe": "tensorwise"},
    "mxfp8": {"--fp8-format": "e4m3", "--fp8-recipe": "mxfp8"},
    "nvfp4": {"--fp4-format": "e2m1", "--fp4-recipe": "nvfp4"},
}
"""perfmodel precision -> Megatron-LM's TransformerConfig flags beside --bf16 (fp8 as current per-tensor scaling,
the release perfmodel prices; TransformerConfig.fp8_recipe, fp4_recipe)."""
NEMO_KEYS = {
    "model.seq_length": "model.config.seq_length",
    "train.micro_batch_size": "data.micro_batch_size",
    "train.global_batch_size": "data.global_batch_size",
    "optimizer.use_distributed_optimizer": "optim.config.use_distributed_optimizer",
    "ddp.use_distributed_optimizer": "trainer.strategy.ddp.use_distributed_optimizer",
    "ddp.use_megatron_fsdp": "trainer.strategy.ddp.use_megatron_fsdp",
    "ddp.data_parallel_sharding_strategy": "trainer.strategy.ddp.data_parallel_sharding_strategy",
    "ddp.grad_reduce_in_fp32": None,
    "mixed_precision": None, "comm_overlap.tp_comm_overlap": None, "dist.use_megatron_fsdp": None,
}  # fmt: skip
"""A Megatron-Bridge override's NeMo 2 name where it is not the strategy's (model.X_size, sequence_parallel, the
pipeline split's account_for_* and layer layout: trainer.strategy.X) or the model config's (model.X:
model.config.X); None where NeMo sets it otherwise (precision: NEMO_PRECISION; TP overlap: the recipe's
MegatronCommOverlapCallback; FSDP: the strategy's fsdp; the gradient buffer's dtype: the precision plugin's,
NEMO_GRAD_REDUCE)."""
NEMO_GRAD_REDUCE = "trainer.plugins.grad_reduce_in_fp32"
"""The gradient buffer's dtype in NeMo 2, set both ways: the plugin's field is copied over the DDP config (nemo-toolkit
2.7.3 lightning/pytorch/strategies/megatron_strategy.py L499), and the recipes' bf16_mixed() sets it true
(collections/llm/recipes/precision/mixed_precision.py L35), so a prediction priced with BF16 reduction says false."""
BRIDGE_GRAD_REDUCE = (
    "# Megatron-Bridge 0.3.1's mixed-precision recipes reduce the gradients in FP32 and copy that over ddp "
    "(training/mixed_precision.py L42, L183, setup L121-122); this prediction priced BF16 reduction: set "
    "cfg.mixed_precision.grad_reduce_in_fp32 = False in the recipe (no override can: Hydra refuses a field of a "
    "recipe given by name)"
)
"""What a Megatron-Bridge config priced with BF16 gradient reduction says (hydra-core 1.3.2 / omegaconf 2.3.0:
`mixed_precision=NAME` then `mixed_precision.grad_reduce_in_fp32=false` fails, 'Could not override', and with '+' the
recipe's name is replaced by a table of the one field)."""
NEMO_STRATEGY = ("_parallel_size", "sequence_parallel", "_in_pipeline_split", "_parallel_layout")
NEMO_PRECISION: dict[str, dict[str, object]] = {
    "bf16": {},
    "fp8": {"trainer.plugins.fp8": "hybrid", "trainer.plugins.fp8_recipe": "tensorwise",
            "trainer.plugins.fp8_param_gather": True},
    "mxfp8": {"trainer.plugins.fp8": "e4m3", "trainer.plugins.fp8_recipe": "mxfp8",
              "trainer.plugins.fp8_param_gather": True},
    "nvfp4": {"trainer.plugins.fp4": "e2m1", "trainer.plugins.fp4_recipe": "nvfp4"},
}  # fmt: skip
"""perfmodel precision -> the fields of the recipe's bf16_mixed() MegatronMixedPrecision plugin, as NeMo's own
bf16_with_fp8_current_scaling_mixed / bf16_with_mxfp8_mixed set them (recipes/precision/mixed_precision.py; not CLI
factories, so the fields are set one by one), and its fp4 fields for NVFP4."""
TITAN_CP = {"all_gather": "allgather", "a2a": "alltoall"}
"""perfmodel's CP exchange -> torchtitan's context_parallel_rotate_method (it has no p2p ring)."""


@dataclass(frozen=True)
class Launch:
    """What `perfmodel launch` writes: the options as the stack names them and the text of the file."""

    stack: str
    options: dict[str, object]
    text: str


@cache
def known_options(stack: str) -> frozenset[str]:
    """The option names read from the stack's published source (perfmodel/data/launch_options.csv)."""
    with files("perfmodel.data").joinpath("launch_options.csv").open(encoding="utf-8") as handle:
        return frozenset(row["option"] for row in csv.DictReader(handle) if row["stack"] == stack)


@dataclass(frozen=True)
class Run:
    """What the config sets beside the layout, as the prediction priced it."""

    precision: str
    cp_comm: str
    knobs: Knobs
    n_layers: int
    dispatcher: str | None = None
    """A MoE model's token dispatcher as priced (ModelSpec.dispatcher: Megatron-Core's moe_token_dispatcher_type);
    None for a dense model."""
    offload_layers: int = 0
    """The leading layers whose activations the prediction offloads to host memory (Scenario's
    activation_offload_layers: its memory estimate holds only the rest), as Megatron-Core's cpu_offloading_num_layers
    sets it; 0: none."""
    grad_reduce_in_fp32: bool = False
    """Whether the prediction reduces the gradients in an FP32 buffer (Scenario.grad_reduce_in_fp32: Megatron-Core's
    DistributedDataParallelConfig field of that name; Megatron-LM's --accumulate-allreduce-grads-in-fp32 sets it,
    megatron-core 0.17.0 megatron/training/training.py L1448)."""
    layer_layout: bool = True
    """Whether Megatron-Core's pipeline_model_parallel_layout can place the model's layers (`_layer_layout`): a GPT
    model without MTP modules; a hybrid pattern is refused beside it (megatron-core 0.18.2 training/arguments.py
    L815)."""
    unset: tuple[str, ...] = ()
    """The run settings the prediction priced (Scenario's RUN_SETTINGS, as `name = value`) that the config does not
    set (FP8 attention, CUDA graphs, the experts' kernels: the recipe's own), named in its header so that the config
    is not taken for the priced run."""


CONFIGURED = ("activation_offload_layers", "grad_reduce_in_fp32")
"""The RUN_SETTINGS a config sets (Run.offload_layers, Run.grad_reduce_in_fp32)."""


def launch(stack: str, layout: Layout, run: Run, note: str) -> Launch:
    """The config of `stack` for `layout` and `run`; `note` (the prediction in a line) heads the file."""
    if stack not in PROFILES:
        raise PerfmodelError(f"--stack: '{stack}' has no launch config; valid: {', '.join(PROFILES)}")
    build = {"megatron-lm": _megatron_lm, "megatron-bridge": _bridge, "nemo": _nemo, "torchtitan": _titan}[stack]
    options = build(layout, run)
    header = [f"# {note}", f"# {NOT_DECIDED}."]
    if run.unset:
        header.append(f"# priced with {', '.join(run.unset)}, which this config does not set: set them in the recipe")
    if stack == "megatron-lm":
        flags = [f"{key}" if value is True else f"{key} {shlex.quote(str(value))}" for key, value in options.items()]
        body = [f"{flag} \\" for flag in flags[:-1]] + flags[-1:]
        header.append("# Megatron-LM pretrain_gpt.py arguments (megatron-core 0.17.1's parser), one a line")
    elif stack == "megatron-bridge":
        body = [f"{key}={_bridge_value(value)}" for key, value in options.items()]
        header.append("# Megatron-Bridge 0.3.1 recipe overrides (key=value, one per line; pass them after the recipe)")
        header += [] if run.grad_reduce_in_fp32 else [BRIDGE_GRAD_REDUCE]
    elif stack == "nemo":
        body = [f"{key}={_bridge_value(value)}" for key, value in options.items()]
        header += [
            "# NeMo 2 (nemo-toolkit 2.7.3) overrides of a pretrain recipe, one a line: nemo llm pretrain --factory "
            "RECIPE key=value ...",
            "# TP communication overlap (priced) comes from the recipe's MegatronCommOverlapCallback: keep it",
        ]
    else:
        body = _toml(options)
        header.append("# torchtitan 0.2.0 job config (--job.config_file); merge with your model's own job TOML")
    return Launch(stack, options, "\n".join([*header, *body]) + "\n")


def for_prediction(prediction: Prediction, stack: str) -> Launch:
    """The stack's config for a prediction's layout, headed by the prediction in a line."""
    lo, scenario = prediction.layout, prediction.scenario
    if PROFILES.get(stack, scenario.stack) != scenario.stack:
        raise PerfmodelError(
            f"--stack {stack}: the prediction is for the {scenario.stack} stack; predict with stack "
            f"'{PROFILES[stack]}' to launch on {stack}"
        )
    note = (
        f"perfmodel: {prediction.model.id} on {lo.n_gpus} x {prediction.hardware.accelerator.id}, "
        f"{scenario.precision}: {lo.describe()}; predicted step {prediction.step_time_s:.3f} s"
    )
    _one_run(scenario)
    model = prediction.model
    dispatcher = model.dispatcher if model.experts else None
    offloaded, fp32 = scenario.activation_offload_layers, scenario.grad_reduce_in_fp32
    unset = tuple(f"{k} = {_bridge_value(v)}" for k, v in run_settings(scenario).items() if k not in CONFIGURED)
    plain = not (model.hybrid_pattern or model.mamba_heads or model.gdn_value_heads or model.mtp_layers)
    run = Run(scenario.precision, scenario.cp_exchange, _priced_knobs(scenario), model.layers, dispatcher, offloaded,
              fp32, plain, unset)  # fmt: skip
    return launch(stack, lo, run, note)


def _priced_knobs(scenario: Scenario) -> Knobs:
    """The scenario's knobs with Megatron's FP8 recipe, left to the release, as the release priced it: 'delayed'
    before efficiency.CURRENT_SCALING_RELEASE (physics/step.py delayed_scaling), so that the config runs the scaling
    whose step it heads (a 2025-06 release's was priced without the amax pass and configured with it)."""
    knobs = scenario.knobs
    by_release = knobs.fp8_recipe is None and get_stack(scenario.stack).fp8_recipe_by_release
    if by_release and scenario.precision == "fp8" and delayed_scaling(context_for(scenario)) == 1:
        return replace(knobs, fp8_recipe="delayed")
    return knobs


SAVED_FIELDS = ("model", "system", "n_gpus", "precision", "stack", "lora_rank", "lora_modules", "vintage")
SAVED_LAYOUT = ("tp", "pp", "cp", "vp", "ep", "etp", "mbs", "gbs", "seq_len", "recompute", "recompute_layers", "zero",
                "cp_comm", "shard_group")  # fmt: skip
"""What a saved prediction's JSON says of its question and layout, under the keyword names of a question."""


class SavedQuestion(NamedTuple):
    """A saved prediction's question (`saved_question`)."""

    keywords: dict[str, Any]
    """Its model, hardware, count, precision, stack and its knobs, release and whole layout, as keywords."""
    settings: dict[str, Any]
    """The run settings it was priced with (RUN_SETTINGS, a MoE model's routing imbalance), as scenario keys: no
    keyword sets them."""
    unrecorded: tuple[str, ...]
    """The settings a record saved before records carried them (commit 3a87941: none of them, nor the `run_settings`
    column of 71abe26) cannot say, and so are priced at their defaults: RUN_SETTINGS and the release (`vintage`);
    empty for a newer record, and for one of 3a87941-71abe26 that sets one of them (its others are its defaults)."""


UNRECORDED = (*RUN_SETTINGS, "vintage")
"""What a record saved before 3a87941 dropped (outputs/record.py: the run settings and the release priced)."""


def saved_question(document: Any, source: str, row: int) -> SavedQuestion:
    """The question of one prediction (`row`, from 1) of a JSON perfmodel wrote (predict's, search's best first,
    compare's, plan's feasible candidates, export's), and what its record cannot say (SavedQuestion). One line
    naming the file otherwise."""
    from perfmodel.outputs.plot import nested_record, records_of

    records = records_of(document, Path(source)) if isinstance(document, dict) else document
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        raise PerfmodelError(f"--from {source}: expected the JSON of predict, search, compare, plan or export")
    if not 1 <= row <= len(records):
        count = len(records)
        held = "1 prediction; allowed: 1" if count == 1 else f"{count} predictions; allowed: 1 to {count}"
        raise PerfmodelError(f"--row {row}: {source} holds {held}")
    record = nested_record(records[row - 1])
    if "phases" in record:
        raise PerfmodelError(f"--from {source}: a campaign has no one layout; launch each phase with its own flags")
    layout = record.get("parallelism")
    if not isinstance(layout, dict) or not record.get("accelerator") or not record.get("model"):
        raise PerfmodelError(f"--from {source}: result {row} has no model, accelerator and parallelism to launch")
    question = {key: record[key] for key in SAVED_FIELDS if record.get(key) is not None}
    question |= {key: layout[key] for key in SAVED_LAYOUT if layout.get(key) is not None}
    question |= {key: value for key, value in (record.get("stack_knobs") or {}).items() if value is not None}
    settings = {key: record[key] for key in RUN_SETTINGS if record.get(key) is not None}
    imbalance = (record.get("moe") or {}).get("imbalance")
    settings |= {"moe_imbalance": imbalance} if imbalance not in (None, 1.0) else {}
    recorded = "run_settings" in record or any(record.get(key) is not None for key in UNRECORDED)  # 3a87941 on
    unrecorded = () if recorded else UNRECORDED
    return SavedQuestion(question | {"gpu": record["accelerator"]}, settings, unrecorded)


SEARCHED_LAYOUTS = 50
"""The best searched layouts `launch` tries, fastest first, for one the stack can run (perfmodel prices some layouts a
stack cannot split or configure: an uneven pipeline split Megatron cannot make, a ZeRO stage torchtitan lacks)."""


def for_scenario(scenario: Scenario, stack: str) -> Launch:
    """The stack's config for the scenario's layout when it gives every dimension (refused, naming the setting, when
    the stack cannot run it); else for the fastest searched layout the stack can run. A refusal every searched layout
    meets (a precision or CP exchange the stack lacks) is that one line."""
    from perfmodel.planning.predict import given_full_layout, predict, search_scenario

    _one_run(scenario)
    if given_full_layout(scenario) is not None:
        return for_prediction(predict(scenario), stack)
    refusals: dict[str, None] = {}
    for prediction in search_scenario(scenario, top=SEARCHED_LAYOUTS).results:
        try:
            return for_prediction(prediction, stack)
        except PerfmodelError as exc:
            refusals[str(exc)] = None
    first = next(iter(refusals))
    if len(refusals) == 1:
        raise PerfmodelError(first)
    raise PerfmodelError(f"none of the {SEARCHED_LAYOUTS} fastest layouts runs on {stack}; the fastest: {first}")


def _one_run(scenario: Scenario) -> None:
    if scenario.phase:
        raise PerfmodelError(
            f"launch takes one steady run, not a campaign of {len(scenario.phase)} phases: launch each phase's "
            "layout with its own flags"
        )


def _refuse(setting: str, stack: str, why: str) -> PerfmodelError:
    return PerfmodelError(f"{setting}: {stack} cannot run it ({why})")


def _fp8_delayed(run: Run) -> bool:
    """Whether the run was priced with Megatron's delayed FP8 scaling (the knob's, or the release's: `_priced_knobs`);
    otherwise each Megatron config names current scaling."""
    return run.precision == "fp8" and run.knobs.fp8_recipe == "delayed"


def _bridge(layout: Layout, run: Run, stack: str = "megatron-bridge") -> dict[str, object]:
    if run.precision not in BRIDGE_PRECISION:
        raise _refuse(f"--precision {run.precision}", "megatron-bridge", "no such mixed-precision recipe in 0.3.1")
    lo, placed = layout, _layer_layout(layout, run)
    uneven = placed is None and _uneven_split(layout, run, stack)
    options: dict[str, object] = {
        "model.tensor_model_parallel_size": lo.tp,
        "model.pipeline_model_parallel_size": lo.pp,
        "model.virtual_pipeline_model_parallel_size": lo.vp if lo.vp > 1 else None,
        "model.context_parallel_size": lo.cp,
        "model.sequence_parallel": lo.tp > 1,
        "model.expert_model_parallel_size": lo.ep,
        "model.expert_tensor_parallel_size": lo.etp,
        "model.seq_length": lo.seq_len,
        "train.micro_batch_size": lo.mbs,
        "train.global_batch_size": lo.gbs,
        "mixed_precision": BRIDGE_DELAYED if _fp8_delayed(run) else BRIDGE_PRECISION[run.precision],
        "comm_overlap.tp_comm_overlap": lo.tp > 1,
        "ddp.use_distributed_optimizer": lo.zero == 1,
        "optimizer.use_distributed_optimizer": lo.zero == 1,
    }
    if run.dispatcher:
        options["model.moe_token_dispatcher_type"] = run.dispatcher
    if uneven or placed:  # false beside a layout, which refuses them (a 405B recipe sets them true)
        options |= {
            "model.account_for_embedding_in_pipeline_split": uneven,
            "model.account_for_loss_in_pipeline_split": uneven,
        }
    if placed:  # Hydra takes '|' unquoted (hydra-core 1.3.2 grammar/OverrideLexer.g4 L62, UNQUOTED_CHAR)
        options["model.pipeline_model_parallel_layout"] = placed
    if lo.cp > 1:
        options["model.cp_comm_type"] = run.cp_comm
    if lo.recompute != "none":
        options["model.recompute_granularity"] = lo.recompute
    if lo.recompute == "full":
        options["model.recompute_method"] = "block" if lo.recompute_layers else "uniform"
        options["model.recompute_num_layers"] = lo.recompute_layers or 1
    if run.offload_layers:  # activations only (cpu_offloading_weights False), as megatron-bridge 0.6.2's recipes
        options |= {
            "model.cpu_offloading": True,
            "model.cpu_offloading_num_layers": run.offload_layers,
            "model.cpu_offloading_weights": False,
        }
    if run.grad_reduce_in_fp32:
        options["ddp.grad_reduce_in_fp32"] = True
    if lo.zero in MEGATRON_SHARDING:  # Megatron-FSDP: its sharding covers gradients (2) and parameters (3) too
        options |= {
            "ddp.use_megatron_fsdp": True,
            "dist.use_megatron_fsdp": True,
            "ddp.data_parallel_sharding_strategy": MEGATRON_SHARDING[lo.zero],
        }
    return options


def _nemo(layout: Layout, run: Run) -> dict[str, object]:
    """NeMo 2's names for what Megatron-Bridge's overrides set (both configure Megatron-Core), the precision as the
    plugin's fields, and Megatron-FSDP through the strategy's fsdp (which saves fsdp_dtensor checkpoints only)."""
    if run.precision not in NEMO_PRECISION:
        raise _refuse(f"--precision {run.precision}", "nemo", "no such MegatronMixedPrecision fp4/fp8 in 2.7.3")
    bridge = _bridge(layout, replace(run, precision="bf16"), "nemo")
    options: dict[str, object] = {}
    for key, value in bridge.items():
        name = key.removeprefix("model.")
        named = NEMO_KEYS.get(
            key, f"trainer.strategy.{name}" if name.endswith(NEMO_STRATEGY) else f"model.config.{name}"
        )
        if named is not None:
            options[named] = value
    options["data.seq_length"] = layout.seq_len
    if layout.zero in MEGATRON_SHARDING:
        options |= {"trainer.strategy.fsdp": "megatron", "trainer.strategy.save_ckpt_format": "fsdp_dtensor"}
    options |= NEMO_PRECISION[run.precision] | {NEMO_GRAD_REDUCE: run.grad_reduce_in_fp32}
    return options | ({"trainer.plugins.fp8_recipe": "delayed"} if _fp8_delayed(run) else {})


def _uneven_split(layout: Layout, run: Run, stack: str) -> bool:
    """Whether Megatron must count the embedding and the loss as a layer each to split the layers over PP x VP
    chunks (as physics/schedule.stage_layers prices an uneven split); a split it cannot make is refused."""
    chunks = layout.pp * layout.vp
    if run.n_layers % chunks == 0:
        return False
    if (run.n_layers + UNEVEN_EXTRA_UNITS) % chunks:
        raise _refuse(
            f"--pp {layout.pp} --vp {layout.vp}", stack,
            f"{run.n_layers} layers, with the embedding and the loss counted as one each, do not split into "
            f"{chunks} equal chunks",
        )  # fmt: skip
    return True


def _layer_layout(layout: Layout, run: Run) -> str | None:
    """Megatron-Core's pipeline_model_parallel_layout (Megatron-LM's --pipeline-model-parallel-layout) for a split
    that counting the embedding and the loss as a layer each does not make even (126 layers + 2 over PP 5 x VP 13 =
    65 chunks), None where that count does (or no split is uneven), or for a model it cannot place
    (Run.layer_layout). The chunks, in the layout's order (virtual stage
    by virtual stage, pipeline rank by rank), take ceil((L + 2) / chunks) units each, the last few one fewer; the
    first opens with the embedding (E), the last closes with the loss (L), every other unit a transformer layer (t):
    no rank holds more than physics/schedule.stage_layers prices. Format: megatron-core 0.18.2
    transformer/pipeline_parallel_layer_layout.py parse_str_to_list ('|' between stages)."""
    chunks, units = layout.pp * layout.vp, run.n_layers + UNEVEN_EXTRA_UNITS
    if not run.layer_layout or run.n_layers % chunks == 0 or units % chunks == 0:
        return None
    base, more = divmod(units, chunks)
    stages = ["t" * (base + (i < more)) for i in range(chunks)]
    stages[0], stages[-1] = "E" + stages[0][1:], stages[-1][1:] + "L"
    return "|".join(stages)


def _megatron_lm(layout: Layout, run: Run) -> dict[str, object]:
    if run.precision not in MEGATRON_LM_PRECISION:
        raise _refuse(f"--precision {run.precision}", "megatron-lm", "no such --fp8-recipe or --fp4-recipe in 0.17.1")
    lo, placed = layout, _layer_layout(layout, run)
    uneven = placed is None and _uneven_split(layout, run, "megatron-lm")
    options: dict[str, object] = {
        "--tensor-model-parallel-size": lo.tp,
        "--pipeline-model-parallel-size": lo.pp,
        "--num-virtual-stages-per-pipeline-rank": lo.vp if lo.vp > 1 and placed is None else None,
        "--pipeline-model-parallel-layout": placed,  # sets VP itself; excludes the two above and below
        "--account-for-embedding-in-pipeline-split": uneven,
        "--account-for-loss-in-pipeline-split": uneven,
        "--context-parallel-size": lo.cp,
        "--cp-comm-type": run.cp_comm if lo.cp > 1 else None,
        "--sequence-parallel": lo.tp > 1,
        "--tp-comm-overlap": lo.tp > 1,
        "--expert-model-parallel-size": lo.ep,
        "--expert-tensor-parallel-size": lo.etp,
        "--moe-token-dispatcher-type": run.dispatcher,
        "--micro-batch-size": lo.mbs,
        "--global-batch-size": lo.gbs,
        "--seq-length": lo.seq_len,
        "--recompute-granularity": lo.recompute if lo.recompute != "none" else None,
        # its parser turns cpu_offloading on for a count above 0, activations only by default (megatron-core 0.17.0
        # megatron/training/arguments.py L1555-1556; core/model_parallel_config.py L375-378)
        "--cpu-offloading-num-layers": run.offload_layers or None,
        "--accumulate-allreduce-grads-in-fp32": run.grad_reduce_in_fp32,
        "--use-distributed-optimizer": lo.zero == 1,
        "--use-megatron-fsdp": lo.zero in MEGATRON_SHARDING,
        "--data-parallel-sharding-strategy": MEGATRON_SHARDING.get(lo.zero),
        "--bf16": True,
    } | MEGATRON_LM_PRECISION[run.precision]
    if _fp8_delayed(run):
        options["--fp8-recipe"] = "delayed"
    if lo.recompute == "full":
        options |= {"--recompute-method": "block" if lo.recompute_layers else "uniform",
                    "--recompute-num-layers": lo.recompute_layers or 1}  # fmt: skip
    return {key: value for key, value in options.items() if value is not None and value is not False}


def _titan(layout: Layout, run: Run) -> dict[str, object]:
    lo, precision, n_layers = layout, run.precision, run.n_layers
    if lo.zero in (1, 2):
        raise _refuse(f"--zero {lo.zero}", "torchtitan", "it shards with FSDP2 (--zero 3) or replicates (--zero 0)")
    if lo.cp > 1 and run.cp_comm not in TITAN_CP:
        raise _refuse(f"--cp-comm {run.cp_comm}", "torchtitan", "its rotate methods: allgather, alltoall")
    if lo.recompute_layers:
        raise _refuse("--recompute-layers", "torchtitan", "activation_checkpoint recomputes every layer or none")
    if precision not in ("bf16", "fp8", "mxfp8"):
        raise _refuse(f"--precision {precision}", "torchtitan", "0.2.0 converts linears to float8 or mxfp8 only")
    if lo.pp > 1 and n_layers % (lo.pp * lo.vp):
        raise _refuse(f"--pp {lo.pp} --vp {lo.vp}", "torchtitan", f"{n_layers} layers do not split evenly into stages")
    options: dict[str, object] = {
        # local_batch_size is what one DP rank runs per optimizer step's forward: one micro-batch without PP (the
        # rest is gradient accumulation, global over local x DP), the whole pipeline's micro-batches with it
        # (torchtitan/train.py gradient_accumulation_steps; distributed/pipeline_parallel.py n_microbatches)
        "training.local_batch_size": lo.gbs // lo.dp if lo.pp > 1 else lo.mbs,
        "training.global_batch_size": lo.gbs,
        "training.seq_len": lo.seq_len,
        "parallelism.data_parallel_replicate_degree": lo.dp if lo.zero == 0 else 1,
        "parallelism.data_parallel_shard_degree": lo.dp if lo.zero == 3 else 1,
        "parallelism.tensor_parallel_degree": lo.tp,
        "parallelism.enable_async_tensor_parallel": bool(run.knobs.async_tp) and lo.tp > 1,
        "parallelism.pipeline_parallel_degree": lo.pp,
        "parallelism.context_parallel_degree": lo.cp,
        "parallelism.expert_parallel_degree": lo.ep,
        "parallelism.expert_tensor_parallel_degree": lo.etp,
        "activation_checkpoint.mode": lo.recompute,
        "compile.enable": bool(run.knobs.compile),
    }
    if lo.pp > 1:
        options |= {
            "parallelism.pipeline_parallel_schedule": "Interleaved1F1B" if lo.vp > 1 else "1F1B",
            "parallelism.pipeline_parallel_layers_per_stage": n_layers // (lo.pp * lo.vp),
            "parallelism.pipeline_parallel_microbatch_size": lo.mbs,
        }
    if lo.cp > 1:
        options["parallelism.context_parallel_rotate_method"] = TITAN_CP[run.cp_comm]
    if precision == "fp8":
        recipe = run.knobs.fp8_recipe or "tensorwise"
        options |= {"model.converters": ["quantize.linear.float8"], "quantize.linear.float8.recipe_name": recipe}
        if recipe == "tensorwise" and lo.zero == 3:  # as priced: FSDP gathers the weights already cast to FP8
            options |= {
                "quantize.linear.float8.enable_fsdp_float8_all_gather": True,
                "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp": True,
            }
    elif precision == "mxfp8":
        options |= {"model.converters": ["quantize.linear.mx"], "quantize.linear.mx.recipe_name": "mxfp8_cublas"}
    return options


def _bridge_value(value: object) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _toml(options: dict[str, object]) -> list[str]:
    """Dotted options as TOML tables, in the order first named."""
    tables: dict[str, list[str]] = {}
    for key, value in options.items():
        table, _, name = key.rpartition(".")
        tables.setdefault(table, []).append(f"{name} = {_toml_value(value)}")
    return [line for table, lines in tables.items() for line in ("", f"[{table}]", *lines)]


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value)
