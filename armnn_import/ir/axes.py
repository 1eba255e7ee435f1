"""numpy axis permutations between Arm NN's 4-D layouts: ``a.transpose(TO_NCHW)`` takes an
NHWC array to NCHW, ``a.transpose(TO_NHWC)`` the other way."""
TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)
