"""Checks of the Arm NN 20.08 runtime harness itself (tests/armnn_runtime/).

These use hand-built .armnn files embedded below, not the project's writer, so they test only the
harness: the build, the runner's CLI contract, and the SetupOutputLayers patch.
"""

import base64

import numpy as np
import pytest

from armnn_import.testing.armnn_runtime import EXIT_LOAD, EXIT_USAGE, ArmnnRuntimeError

# Input "in" (binding 0, Float32 [1,4]) -> Activation ReLu -> Output "out" (binding 0).
# Built by hand with the flatbuffers package from schema/ArmnnSchema.fbs (file identifier ARMN).
RELU_ARMNN = base64.b64decode(
    "FAAAAEFSTU4AAAoAEAAMAAgABAAKAAAADAAAABAAAAAUAAAAAQAAAAIAAAABAAAAAAAAAAMAAAAUAQAAZAAAAAQA"
    "AAAA////CAAAAAAAAAvu/v//DAAAAAAABgAIAAQABgAAAAQAAACa////FAAAABQAAAADAAAAIAAAAAIAAAAAAAAA"
    "AQAAAAQAAACI////AQAAAAAAAAADAAAAb3V0AFz///8QAAAAAAAAAQgADgAIAAQACAAAABAAAAAgAAAAAAAGAAYA"
    "BQAGAAAAAAMOABgAFAAQAAwACAAEAA4AAAAUAAAAGAAAAAkAAABMAAAAAQAAAAEAAAAgAAAAAQAAAAwAAAAIAAwA"
    "AAAEAAgAAAAAAAAAAAAAAHj///8EAAAAcP///wAAAAEEAAAAAgAAAAEAAAAEAAAABAAAAHJlbHUAAAAACAAMAAsA"
    "BAAIAAAACAAAAAAAAAn2////DAAAAAAABgAKAAQABgAAABQAAAAAAA4AFAAAABAADAAIAAQADgAAABAAAAAUAAAA"
    "AQAAAEAAAAABAAAAEAAAAAAAAAAIAAgAAAAEAAgAAAAMAAAACAAMAAgABwAIAAAAAAAAAQQAAAACAAAAAQAAAAQA"
    "AAACAAAAaW4AAA=="
)

# Input (Float32 [1,4]) -> Reshape [2,2] -> Output binding 0
#                       -> Activation ReLu -> Output binding 1
# Two Output layers: unpatched Arm NN 20.08 aborts on this file (SetupOutputLayers bug).
TWO_OUTPUTS_ARMNN = base64.b64decode(
    "FAAAAEFSTU4AAAoAEAAMAAgABAAKAAAADAAAABQAAAAYAAAAAgAAAAMAAAAEAAAAAQAAAAAAAAAFAAAADAIAAFwB"
    "AADIAAAAbAAAAAQAAAAQ/v//CAAAAAAAAAs2////DAAAAAgADAAIAAQACAAAAAEAAAAEAAAArv7//xQAAAAUAAAA"
    "AwAAACAAAAAEAAAAAAAAAAEAAAAEAAAAnP7//wEAAAAAAAAABAAAAG91dDEAAAAAdP7//wgAAAAAAAALmv///wQA"
    "AACi////BAAAAAb///8UAAAAFAAAAAMAAAAgAAAAAwAAAAAAAAABAAAABAAAAPT+//8CAAAAAAAAAAQAAABvdXQw"
    "AAAAAMz+//8IAAAAAAAADnD///8QAAAAIAAAAAAABgAIAAQABgAAAAQAAAACAAAAAgAAAAIAAAB2////FAAAABgA"
    "AAAFAAAARAAAAAIAAAABAAAAGAAAAAEAAAAEAAAAaP///wAAAAAAAAAA2P7//wQAAADQ/v//AAAAAQQAAAACAAAA"
    "AgAAAAIAAAACAAAAcnMAAFz///8QAAAAAAAAAQgADgAIAAQACAAAABAAAAAgAAAAAAAGAAYABQAGAAAAAAMOABgA"
    "FAAQAAwACAAEAA4AAAAUAAAAGAAAAAkAAABMAAAAAQAAAAEAAAAgAAAAAQAAAAwAAAAIAAwAAAAEAAgAAAAAAAAA"
    "AAAAAHj///8EAAAAcP///wAAAAEEAAAAAgAAAAEAAAAEAAAABAAAAHJlbHUAAAAACAAMAAsABAAIAAAACAAAAAAA"
    "AAn2////DAAAAAAABgAKAAQABgAAABQAAAAAAA4AFAAAABAADAAIAAQADgAAABAAAAAUAAAAAQAAAEAAAAABAAAA"
    "EAAAAAAAAAAIAAgAAAAEAAgAAAAMAAAACAAMAAgABwAIAAAAAAAAAQQAAAACAAAAAQAAAAQAAAACAAAAaW4AAA=="
)

X = np.array([[-1.5, 0.0, 2.25, -3.0]], dtype=np.float32)


def test_relu_matches_numpy(armnn_runner):
    (out,) = armnn_runner(RELU_ARMNN, [X])
    assert out.dtype == np.float32 and out.shape == (1, 4)
    np.testing.assert_array_equal(out, np.maximum(X, 0))


def test_two_outputs(armnn_runner):
    out0, out1 = armnn_runner(TWO_OUTPUTS_ARMNN, [X])
    np.testing.assert_array_equal(out0, X.reshape(2, 2))
    np.testing.assert_array_equal(out1, np.maximum(X, 0))


def test_garbage_file_is_rejected_with_one_line(armnn_runner):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_runner(b"this is not an Arm NN network" * 4, [])
    err = info.value
    assert err.returncode == EXIT_LOAD
    lines = err.stderr.strip().splitlines()
    assert len(lines) == 1, err.stderr
    assert lines[0].startswith("armnn-run: error: ")


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((1, 5), np.float32),  # wrong shape
        np.zeros((1, 4), np.float64),  # wrong dtype
    ],
)
def test_input_mismatch_is_a_usage_error(armnn_runner, bad):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_runner(RELU_ARMNN, [bad])
    assert info.value.returncode == EXIT_USAGE
    assert len(info.value.stderr.strip().splitlines()) == 1


def test_wrong_input_count_is_a_usage_error(armnn_runner):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_runner(RELU_ARMNN, [X, X])
    assert info.value.returncode == EXIT_USAGE
