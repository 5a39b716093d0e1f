"""Backends: the reference interpreter (``relay.backend.interpreter``) and, later, lowering to
TVM kernels, the graph executor and the VM."""
