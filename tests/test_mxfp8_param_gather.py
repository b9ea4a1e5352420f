"""MXFP8's parameter all-gather as Megatron runs it: BF16 parameters gathered into the gradient buffer, each then
cast into its MXFP8 parameter (megatron-core 0.14.0 distributed_data_parallel.py start_param_sync; megatron-bridge
bf16_with_mxfp8_mixed sets reuse_grad_buf_for_mxfp8_param_ag with fp8_param_gather)."""

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.precision import BF16_BYTES, get_recipe
from perfmodel.inputs.stacks import get_stack, stack_recipe


def test_megatron_gathers_mxfp8_parameters_in_bf16_and_per_tensor_fp8_in_fp8() -> None:
    acc, stack = get_accelerator("b200"), get_stack("megatron")
    mxfp8 = stack_recipe(get_recipe("mxfp8", acc), stack)
    fp8 = stack_recipe(get_recipe("fp8", acc), stack)
    assert (mxfp8.param_gather_bytes, fp8.param_gather_bytes) == (BF16_BYTES, 1.0)
    # The GEMMs still read MXFP8 weights: both quantised copies are held, the gathered BF16 lives in the grad buffer.
    assert mxfp8.weight_bytes == 2 * mxfp8.element_bytes
